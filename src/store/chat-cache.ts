// Recent history of active chats, kept in memory by the SQLite store so that a chatId request
// does not read the database: filled on a miss, written through at commit. Bounded by total size.
// Safe because the SQLite store is owned by one gateway process (store/sqlite-guard.ts); the
// postgres store, which several instances share, keeps no such cache (see store/postgres.ts).
import { LRUCache } from "lru-cache";
import type { AppendRoundInput, ChatInfo, ChatMessage } from "./types.js";

/** Messages kept per chat: more than any app's history asks for in practice (history 6 = 12). */
export const CACHED_MESSAGES = 64;
const MAX_BYTES = 64 * 1024 * 1024;
const MAX_CHATS = 20_000;

interface Entry {
  /** undefined: not read yet; null: the chat does not exist */
  info?: ChatInfo | null;
  /** the chat's last messages, oldest first; undefined: not read yet */
  messages?: ChatMessage[];
  /** `messages` holds the whole chat */
  complete?: boolean;
  /** approximate bytes held, kept up to date as messages come and go */
  bytes: number;
  /** approximate bytes of the info's variables */
  infoBytes?: number;
}

const ENTRY_BYTES = 64;
const messageBytes = (m: ChatMessage) => 32 + m.content.length * 2;
const sumBytes = (messages: ChatMessage[]) => messages.reduce((n, m) => n + messageBytes(m), ENTRY_BYTES);

export function createChatCache() {
  const entries = new LRUCache<string, Entry>({
    max: MAX_CHATS,
    maxSize: MAX_BYTES,
    sizeCalculation: (e) => e.bytes + (e.infoBytes ?? 0),
  });
  const keyOf = (appId: string, chatId: string) => `${appId}\u0000${chatId}`;
  const entry = (appId: string, chatId: string): Entry => entries.get(keyOf(appId, chatId)) ?? { bytes: ENTRY_BYTES };
  const save = (appId: string, chatId: string, e: Entry) => entries.set(keyOf(appId, chatId), e);

  return {
    info: (appId: string, chatId: string) => entries.get(keyOf(appId, chatId))?.info,
    /** `variablesChars`: the length of the variables' JSON, for the size bound */
    setInfo(appId: string, chatId: string, info: ChatInfo | null, variablesChars = 0) {
      save(appId, chatId, { ...entry(appId, chatId), info, infoBytes: variablesChars * 2 });
    },
    /** The last `limit` messages when the cache can answer, else undefined. */
    messages(appId: string, chatId: string, limit: number): ChatMessage[] | undefined {
      const e = entries.get(keyOf(appId, chatId));
      if (!e?.messages || (!e.complete && e.messages.length < limit)) return undefined;
      return e.messages.slice(-limit);
    },
    setMessages(appId: string, chatId: string, messages: ChatMessage[], complete: boolean) {
      save(appId, chatId, { ...entry(appId, chatId), messages, complete, bytes: sumBytes(messages) });
    },
    /** A round was committed: update what is cached of its chat (nothing is cached for a new one).
     *  `variablesJson`: the variables as stored, when the round replaced them. */
    appended(r: AppendRoundInput, variablesJson?: string) {
      const e = entries.get(keyOf(r.appId, r.chatId));
      if (!e) return;
      if (e.info) {
        e.info = { ...e.info, updatedAt: Math.max(e.info.updatedAt, r.at) };
        if (r.variables && variablesJson !== undefined) {
          e.info.variables = r.variables;
          e.infoBytes = variablesJson.length * 2;
        }
      } else if (e.info === null) e.info = undefined; // created just now: read it again when asked
      if (e.messages) {
        const user: ChatMessage = { role: "user", content: r.user, createdAt: r.at };
        const assistant: ChatMessage = { role: "assistant", content: r.assistant, createdAt: r.at };
        e.messages.push(user, assistant);
        e.bytes += messageBytes(user) + messageBytes(assistant);
        if (e.messages.length > CACHED_MESSAGES) {
          for (const dropped of e.messages.splice(0, e.messages.length - CACHED_MESSAGES)) e.bytes -= messageBytes(dropped);
          e.complete = false;
        }
      }
      save(r.appId, r.chatId, e);
    },
  };
}
