// Recent history of active chats, kept in memory by the SQLite store so that a chatId request
// does not read the database: filled on a miss, written through at commit. Bounded by total size.
// Safe because the SQLite store is owned by one gateway process (store/sqlite-guard.ts); the
// postgres store, which several instances share, keeps no such cache (see store/postgres.ts).
import { LRUCache } from "lru-cache";
import { titleFrom, type StoredRound } from "./rows.js";
import type { AppendRoundInput, ChatInfo } from "./types.js";

/** Messages kept per chat: more than any app's history asks for in practice (history 6 = 12). */
export const CACHED_MESSAGES = 64;
const MAX_BYTES = 64 * 1024 * 1024;
const MAX_CHATS = 20_000;

/** What a chat row says: its info, and whether it has no round yet (opened, not written to). */
export interface ChatHead {
  info: ChatInfo;
  empty: boolean;
}

interface Entry {
  /** undefined: not read yet; null: the chat does not exist */
  head?: ChatHead | null;
  /** the chat's last whole rounds, oldest first; undefined: not read yet */
  rounds?: StoredRound[];
  /** messages in `rounds` */
  messages: number;
  /** `rounds` holds the whole chat */
  complete?: boolean;
  /** approximate bytes held, kept up to date as rounds come and go */
  bytes: number;
  /** approximate bytes of the info's variables */
  infoBytes?: number;
}

const ENTRY_BYTES = 64;
const sideBytes = (text: string | null) => (text === null ? 0 : 32 + text.length * 2);
const roundBytes = (r: StoredRound) => sideBytes(r.user) + sideBytes(r.assistant);
const messageCount = (r: StoredRound) => (r.user === null ? 0 : 1) + (r.assistant === null ? 0 : 1);

export function createChatCache() {
  const entries = new LRUCache<string, Entry>({
    max: MAX_CHATS,
    maxSize: MAX_BYTES,
    sizeCalculation: (e) => e.bytes + (e.infoBytes ?? 0),
  });
  const keyOf = (appId: string, chatId: string) => `${appId}\u0000${chatId}`;
  const entry = (appId: string, chatId: string): Entry => entries.get(keyOf(appId, chatId)) ?? { messages: 0, bytes: ENTRY_BYTES };
  const save = (appId: string, chatId: string, e: Entry) => entries.set(keyOf(appId, chatId), e);

  /** Drops the oldest rounds past CACHED_MESSAGES messages; false when any was dropped. */
  function trim(e: Entry): boolean {
    let kept = true;
    while (e.rounds!.length > 0 && e.messages > CACHED_MESSAGES) {
      const dropped = e.rounds!.shift()!;
      e.messages -= messageCount(dropped);
      e.bytes -= roundBytes(dropped);
      kept = false;
    }
    return kept;
  }

  return {
    head: (appId: string, chatId: string) => entries.get(keyOf(appId, chatId))?.head,
    /** `variablesChars`: the length of the variables' JSON, for the size bound; undefined: unknown */
    setHead(appId: string, chatId: string, head: ChatHead | null | undefined, variablesChars = 0) {
      save(appId, chatId, { ...entry(appId, chatId), head, infoBytes: variablesChars * 2 });
    },
    /** The chat's last rounds, holding at least `limit` messages or the whole chat, when the cache
     *  has them; else undefined. */
    rounds(appId: string, chatId: string, limit: number): StoredRound[] | undefined {
      const e = entries.get(keyOf(appId, chatId));
      if (!e?.rounds || (!e.complete && e.messages < limit)) return undefined;
      return e.rounds;
    },
    /** `complete`: `rounds` are all the chat has */
    setRounds(appId: string, chatId: string, rounds: StoredRound[], complete: boolean) {
      const e: Entry = { ...entry(appId, chatId), rounds: [...rounds], messages: 0, bytes: ENTRY_BYTES };
      for (const r of rounds) {
        e.messages += messageCount(r);
        e.bytes += roundBytes(r);
      }
      e.complete = trim(e) && complete;
      save(appId, chatId, e);
    },
    /** A round was committed: update what is cached of its chat (nothing is cached for a new one).
     *  `variablesJson`: the variables as stored, when the round replaced them. */
    appended(r: AppendRoundInput, variablesJson?: string) {
      const e = entries.get(keyOf(r.appId, r.chatId));
      if (!e) return;
      if (e.head) {
        const info = { ...e.head.info, updatedAt: Math.max(e.head.info.updatedAt, r.at) };
        if (e.head.empty) info.title = titleFrom(r.user);
        if (r.variables && variablesJson !== undefined) {
          info.variables = r.variables;
          e.infoBytes = variablesJson.length * 2;
        }
        e.head = { info, empty: false };
      } else if (e.head === null) e.head = undefined; // created just now: read it again when asked
      if (e.rounds) {
        const round: StoredRound = { user: r.user, assistant: r.assistant, createdAt: r.at };
        e.rounds.push(round);
        e.messages += 2;
        e.bytes += roundBytes(round);
        if (!trim(e)) e.complete = false;
      }
      save(r.appId, r.chatId, e);
    },
  };
}
