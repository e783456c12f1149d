// The PostgreSQL half of the Store that holds conversations. A chatId's owner check, chat and last
// rounds come in one statement, shared by the reads made while one is in flight
// (postgres-read-batch.ts); the owner is checked in it before any round is read. A batch's rounds go
// in one statement per writer of a chat (postgres.ts commits them with the batch's other writes).
import type { PgWrite, PgPool } from "./postgres-pool.js";
import type { PgBatchPlan } from "./postgres-write-batch.js";
import { unescapeText } from "./postgres-pool.js";
import { createPgReadBatcher } from "./postgres-read-batch.js";
import { chatInfoOf, newestMessages, ownerColumns, titleFrom, type ChatRow } from "./rows.js";
import type { AppendRoundInput, ChatOwner, ChatSummary, OpenChatOptions, OpenedChat, ShareUser } from "./types.js";

/** A round as the batch writes it: variables as JSON text, or null to keep the chat's. */
export type RoundWrite = Omit<AppendRoundInput, "variables"> & { kind: "round"; variables: string | null };

/** A round in the read's JSON: user turn, assistant turn, created_at. */
type JsonRound = [string, string, number];
/** a chat the reader may use, with its last rounds (json, parsed by the driver; null: none) */
type ChatRead = ChatRow & { allowed: boolean; rounds: JsonRound[] | null };
interface ChatKey {
  appId: string;
  chatId: string;
  rounds: number;
  /** a bound on the stored bytes of the rounds read (see storedBytesBound) */
  storedBytes: number;
  who: ChatOwner | null;
}

/** A column of the chat read only for a reader that may use it: CASE is evaluated lazily, so a
 *  refused reader's read never reaches the rounds (a filter in a subquery may be moved after it). */
const ifAllowed = (expression: string, as: string) => `CASE WHEN a.allowed THEN ${expression} END AS ${as}`;

/** Whether the writer or reader `w` (share_id, uid, key_name) may use the chat `c`: as rows.ts's mayUse. */
const mayUse = (c: string, w: string) => `((${c}.share_id IS NOT NULL AND ${c}.share_id = ${w}.share_id AND ${c}.uid = ${w}.uid)
  OR (${c}.share_id IS NULL AND ${w}.key_name IS NOT NULL AND (${c}.key_name IS NULL OR ${c}.key_name = ${w}.key_name)))`;

const JSON_ROUND = "json_build_array(r.user_turn, r.assistant_turn, r.created_at)";

/** exported for the test that the owner is checked before any round is read */
export const CHAT_SQL = {
  // chats with their last rounds, for a batch of reads (k.i: which read), the rounds and the chat's
  // details only when the reader may use it; a chat's rounds are numbered 1..rounds without gaps (a
  // round and its number are committed together), so its last rounds are a range of its primary
  // key, of which, for a read with a byte bound, only the newest within it are sent (the running
  // sum costs a reader without a bound nothing: CASE runs one of the two)
  readChats: {
    name: "read-chats",
    text: `SELECT k.i, a.allowed, ${["share_id", "uid", "key_name", "title", "updated_at", "variables"].map((c) => ifAllowed(`c.${c}`, c)).join(", ")},
        ${ifAllowed(`CASE WHEN k.stored_bytes >= ${Number.MAX_SAFE_INTEGER} THEN (SELECT json_agg(${JSON_ROUND} ORDER BY r.seq)
            FROM rounds r WHERE r.app_id = k.app_id AND r.chat_id = k.chat_id AND r.seq > c.rounds - k.rounds)
          ELSE (SELECT json_agg(${JSON_ROUND} ORDER BY r.seq)
            FROM (SELECT seq, user_turn, assistant_turn, created_at,
                sum(octet_length(user_turn) + octet_length(assistant_turn)) OVER (ORDER BY seq DESC) AS bytes
              FROM rounds WHERE app_id = k.app_id AND chat_id = k.chat_id AND seq > c.rounds - k.rounds) r
            WHERE r.bytes <= k.stored_bytes) END`, "rounds")}
      FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::boolean[], $6::text[], $7::text[], $8::text[])
        WITH ORDINALITY AS k (app_id, chat_id, rounds, stored_bytes, shared, share_id, uid, key_name, i)
      JOIN chats c ON c.app_id = k.app_id AND c.chat_id = k.chat_id
      CROSS JOIN LATERAL (SELECT k.shared OR ${mayUse("c", "k")} AS allowed) a`,
  },
  // chats opened before their first round, one per (app, chat), in that order: no title, no
  // rounds, updated_at 0 (not listed); the ones created (k.i) come back
  createChats: {
    name: "create-chats",
    text: `WITH created AS (
        INSERT INTO chats (app_id, chat_id, share_id, uid, key_name, title, created_at, updated_at, rounds)
        SELECT app_id, chat_id, share_id, uid, key_name, '', at, 0, 0
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[]) AS k (app_id, chat_id, share_id, uid, key_name, at)
        ON CONFLICT (app_id, chat_id) DO NOTHING
        RETURNING app_id, chat_id
      )
      SELECT k.i FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k (app_id, chat_id, i)
      JOIN created ON created.app_id = k.app_id AND created.chat_id = k.chat_id`,
  },
  // one group of rounds per chat (its rounds counted, its first turn's title and time, its last time
  // and variables, its writer): a chat row is created or locked in the order given, and, when its
  // writer may use it (or the app shares its chats: the groups named by $17, $18), its number moved
  // past the new rounds, which take the numbers below it in the order they came. The groups written
  // (k.i) come back.
  appendRounds: {
    name: "append-rounds",
    text: `WITH chat AS (
        INSERT INTO chats AS c (app_id, chat_id, share_id, uid, key_name, title, created_at, updated_at, rounds, variables)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::text[])
        ON CONFLICT (app_id, chat_id) DO UPDATE
        SET rounds = c.rounds + EXCLUDED.rounds, updated_at = GREATEST(c.updated_at, EXCLUDED.updated_at),
          variables = COALESCE(EXCLUDED.variables, c.variables), title = CASE WHEN c.rounds = 0 THEN EXCLUDED.title ELSE c.title END
        WHERE (c.app_id, c.chat_id) IN (SELECT * FROM unnest($17::text[], $18::text[])) OR ${mayUse("c", "EXCLUDED")}
        RETURNING app_id, chat_id, rounds
      ), added AS (
        INSERT INTO rounds (app_id, chat_id, seq, user_turn, assistant_turn, created_at)
        SELECT r.app_id, r.chat_id, chat.rounds - r.later, r.user_turn, r.assistant_turn, r.created_at
        FROM unnest($11::text[], $12::text[], $13::bigint[], $14::text[], $15::text[], $16::bigint[]) AS r (app_id, chat_id, later, user_turn, assistant_turn, created_at)
        JOIN chat ON chat.app_id = r.app_id AND chat.chat_id = r.chat_id
      )
      SELECT k.i FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k (app_id, chat_id, i)
      JOIN chat ON chat.app_id = k.app_id AND chat.chat_id = k.chat_id`,
  },
  listChats: {
    name: "list-chats",
    text: `SELECT chat_id, title, updated_at FROM chats WHERE share_id = $1 AND uid = $2 AND updated_at >= $3 AND rounds > 0
      ORDER BY updated_at DESC, id DESC LIMIT $4`,
  },
};

/** A round holds two messages: the rounds that hold the last `count` messages. */
const roundsFor = (count: number) => Math.ceil(count / 2);

/** Stored text is never shorter than a quarter of the text it reads back as (postgres-pool.ts
 *  escapes U+0000 as 4 bytes): rounds past 4 × maxBytes stored bytes cannot be in the answer. */
const storedBytesBound = (maxBytes: number) => (maxBytes < Number.MAX_SAFE_INTEGER / 4 ? Math.max(Math.ceil(maxBytes * 4), 0) : Number.MAX_SAFE_INTEGER);

/** A chat to create for openChat (a batch of them goes in one statement of its own, see planCreates). */
export interface ChatCreate {
  appId: string;
  chatId: string;
  who: ChatOwner | null;
  at: number;
}

export function createPgChatOps(db: PgPool, write: (round: RoundWrite) => Promise<unknown>, create: (chat: ChatCreate) => Promise<unknown>) {
  const readChat = createPgReadBatcher(async (keys: ChatKey[]): Promise<Array<ChatRead | undefined>> => {
    const owners = keys.map((k) => ownerColumns(k.who));
    const columns = [
      keys.map((k) => k.appId), keys.map((k) => k.chatId), keys.map((k) => k.rounds), keys.map((k) => k.storedBytes),
      keys.map((k) => k.who === null), ...[0, 1, 2].map((column) => owners.map((o) => o[column])),
    ];
    const found = await db.read<ChatRead & { i: number }>(CHAT_SQL.readChats, columns);
    const answers = new Array<ChatRead | undefined>(keys.length);
    for (const row of found) answers[row.i - 1] = row;
    return answers;
  });

  return {
    async openChat(appId: string, chatId: string, who: ChatOwner | null, opts: OpenChatOptions): Promise<OpenedChat> {
      const count = Math.max(Math.floor(opts.limit), 0) || 0;
      const key: ChatKey = { appId, chatId, rounds: roundsFor(count), storedBytes: storedBytesBound(opts.maxBytes), who };
      let row = await readChat(key);
      if (!row && opts.create) {
        if ((await create({ appId, chatId, who, at: Date.now() })) === true) {
          return { status: "owned", chat: { chatId, owner: who, title: "", updatedAt: 0 }, messages: [] };
        }
        // created meanwhile by another caller (the insert waited for its commit): read it now
        row = await readChat(key);
      }
      if (!row) return { status: "missing" };
      if (!row.allowed) return { status: "not_owned" };
      const rounds = (row.rounds ?? []).map(([user, assistant, createdAt]) => ({ user: unescapeText(user), assistant: unescapeText(assistant), createdAt }));
      return { status: "owned", chat: chatInfoOf(chatId, row), messages: newestMessages(rounds, count, opts.maxBytes) };
    },
    async appendRound(input: AppendRoundInput): Promise<boolean> {
      const variables = input.variables ? JSON.stringify(input.variables) : null;
      const { appId, chatId, owner, shared, user, assistant, at } = input;
      return (await write({ kind: "round", appId, chatId, owner, shared, user, assistant, at, variables })) === true;
    },
    async listChats(owner: ShareUser, opts: { since: number; limit: number }): Promise<ChatSummary[]> {
      const count = Math.floor(opts.limit);
      if (!(count > 0)) return [];
      const rows = await db.read<{ chat_id: string; title: string; updated_at: number }>(CHAT_SQL.listChats, [owner.shareId, owner.uid, asEpoch(opts.since), count]);
      return rows.map((c) => ({ chatId: c.chat_id, title: c.title, updatedAt: c.updated_at }));
    },
  };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
/** Rounds of one writer: the same owner, or an app that shares its chats. */
const writerOf = (r: RoundWrite) => (r.shared ? "shared" : JSON.stringify(ownerColumns(r.owner)));

/** The statements of a batch's rounds, and which rounds they wrote. A chat's rounds go in runs of
 *  one writer, its first run in the first statement, its second in the second, and so on: the
 *  chats are locked in (app, chat) order by the first, and each later one sees what the one before
 *  did (a chat the first run created belongs to that run's writer). */
export function planRounds(rounds: RoundWrite[]): { writes: PgWrite[]; written(rows: unknown[][]): Set<RoundWrite> } {
  // a stable sort: a chat's rounds keep their order
  const sorted = [...rounds].sort((a, b) => compare(a.appId, b.appId) || compare(a.chatId, b.chatId));
  const waves: RoundWrite[][][] = [];
  for (let start = 0, end = 0; start < sorted.length; start = end) {
    const first = sorted[start]!;
    while (end < sorted.length && sorted[end]!.appId === first.appId && sorted[end]!.chatId === first.chatId) end++;
    for (let i = start, wave = 0; i < end; wave++) {
      let j = i + 1;
      while (j < end && writerOf(sorted[j]!) === writerOf(sorted[i]!)) j++;
      (waves[wave] ??= []).push(sorted.slice(i, j));
      i = j;
    }
  }
  return {
    writes: waves.map((groups) => ({ q: CHAT_SQL.appendRounds, values: roundsValues(groups) })),
    written(rows) {
      const done = new Set<RoundWrite>();
      waves.forEach((groups, wave) => {
        for (const { i } of rows[wave] as Array<{ i: number }>) for (const r of groups[i - 1]!) done.add(r);
      });
      return done;
    },
  };
}

/** A batch of chats to create, as one statement: each chat once (its first creator in the batch;
 *  the others answer false and read it), in (app, chat) order, as rounds lock them (planRounds), so
 *  the two kinds of transaction never wait for each other in a cycle. Answers true for the creators
 *  that made their chat. */
export function planCreates(creates: ChatCreate[]): PgBatchPlan {
  const first = new Map<string, ChatCreate>();
  for (const c of creates) if (!first.has(JSON.stringify([c.appId, c.chatId]))) first.set(JSON.stringify([c.appId, c.chatId]), c);
  const chats = [...first.values()].sort((a, b) => compare(a.appId, b.appId) || compare(a.chatId, b.chatId));
  const columns: unknown[][] = Array.from({ length: 6 }, () => []);
  for (const c of chats) [c.appId, c.chatId, ...ownerColumns(c.who), c.at].forEach((value, column) => columns[column]!.push(value));
  return {
    writes: [{ q: CHAT_SQL.createChats, values: columns }],
    answers([rows]) {
      const created = new Set((rows as Array<{ i: number }>).map(({ i }) => chats[i - 1]!));
      return creates.map((c) => created.has(c));
    },
  };
}

/** The groups' chats, one array per column, then their rounds (each with how many of its group come
 *  after it), then the chats of the groups that share. */
function roundsValues(groups: RoundWrite[][]): unknown[] {
  const chats: unknown[][] = Array.from({ length: 10 }, () => []);
  const turns: unknown[][] = Array.from({ length: 6 }, () => []);
  const shared: unknown[][] = [[], []];
  for (const group of groups) {
    let updatedAt = group[0]!.at;
    let variables: string | null = null;
    group.forEach(({ appId, chatId, user, assistant, at, variables: v }, i) => {
      updatedAt = Math.max(updatedAt, at);
      variables = v ?? variables;
      [appId, chatId, group.length - 1 - i, user, assistant, at].forEach((value, column) => turns[column]!.push(value));
    });
    const { appId, chatId, owner, user, at } = group[0]!;
    [appId, chatId, ...ownerColumns(owner), titleFrom(user), at, updatedAt, group.length, variables].forEach((value, column) => chats[column]!.push(value));
    if (group[0]!.shared) [appId, chatId].forEach((value, column) => shared[column]!.push(value));
  }
  return [...chats, ...turns, ...shared];
}

/** Epoch-ms bounds compared with integer columns: `t >= x` holds exactly when `t >= ceil(x)` (and
 *  `t < x` when `t < ceil(x)`), as SQLite compares them; kept within the range times can have. */
export function asEpoch(ms: number): number {
  return Math.min(Math.max(Math.ceil(ms), Number.MIN_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
}
