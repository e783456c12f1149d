// The PostgreSQL Store (CONTRACTS §11): what the SQLite store keeps, in a database several gateway
// instances share. Rounds and usage rows are written by group commit (postgres-write-batch.ts): the
// writes of a batch in one transaction committed once its statements' results are back
// (postgres-pool.ts): a round and its chat, a usage row and its spend counters are written whole or
// not at all, and a write the store gave up on (503) is never committed when the server wakes up.
// Each statement costs a round trip and a wake-up of a server process, more than the rows it reads
// or writes: a batch's rounds go in one statement, and a chatId's chat and last rounds come in one,
// shared by the chatId reads made while one is in flight (postgres-read-batch.ts).
//
// No history cache here, unlike SQLite's: another instance may append to a chat at any time, and
// checking a cached history for staleness costs the same round trip as reading the chat's last
// rounds through their primary key, so every read goes to the database.
import { createPgKeyOps } from "./postgres-keys.js";
import { createPgPool, unescapeText, type PgPool, type PgWrite } from "./postgres-pool.js";
import { createPgReadBatcher } from "./postgres-read-batch.js";
import { createPgWriteBatcher, type PgWriteBatcher } from "./postgres-write-batch.js";
import { titleFrom } from "./sqlite.js";
import type { AppendRoundInput, ChatInfo, ChatMessage, ChatOwner, ChatSummary, ChatWithMessages, Store, UsageQuery, UsageRow, UsageSummary, UsageTotals } from "./types.js";

interface ChatRow {
  share_id: string | null;
  uid: string | null;
  title: string;
  updated_at: number;
  variables: string | null;
}
/** A round in getChatsWithRounds' JSON: user turn, assistant turn, created_at. */
type StoredRound = [string, string, number];
/** a chat and its last rounds (json, parsed by the driver; null: no rounds) */
type ChatWithRounds = ChatRow & { rounds: StoredRound[] | null };
interface ChatKey {
  appId: string;
  chatId: string;
  rounds: number;
}
interface RoundRow {
  user_turn: string;
  assistant_turn: string;
  created_at: number;
}
interface SummaryRow extends UsageTotals {
  /** GROUPING(app_id, model): 3 the totals, 1 one app, 2 one model */
  level: number;
  app_id: string | null;
  model: string | null;
}

const SQL = {
  getChat: { name: "get-chat", text: `SELECT share_id, uid, title, updated_at, variables FROM chats WHERE app_id = $1 AND chat_id = $2` },
  lastRounds: {
    name: "last-rounds",
    text: `SELECT user_turn, assistant_turn, created_at FROM rounds WHERE app_id = $1 AND chat_id = $2 ORDER BY seq DESC LIMIT $3`,
  },
  // chats with their last rounds, for a batch of reads (k.i: which read); a chat's rounds are
  // numbered 1..rounds without gaps (a round and its number are committed together), so its last
  // rounds are a range of its primary key
  getChatsWithRounds: {
    name: "get-chats-with-rounds",
    text: `SELECT k.i, c.share_id, c.uid, c.title, c.updated_at, c.variables,
        (SELECT json_agg(json_build_array(r.user_turn, r.assistant_turn, r.created_at) ORDER BY r.seq)
          FROM rounds r WHERE r.app_id = k.app_id AND r.chat_id = k.chat_id AND r.seq > c.rounds - k.rounds) AS rounds
      FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS k (app_id, chat_id, rounds, i)
      JOIN chats c ON c.app_id = k.app_id AND c.chat_id = k.chat_id`,
  },
  // a batch's rounds, one entry per chat (its rounds counted, its first turn's title and time, its
  // last time and variables): the chat rows are created or locked in the order given and their
  // numbers moved past the new rounds, which take the numbers below them in the order they came
  appendRounds: {
    name: "append-rounds",
    text: `WITH chat AS (
        INSERT INTO chats AS c (app_id, chat_id, share_id, uid, title, created_at, updated_at, rounds, variables)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[])
        ON CONFLICT (app_id, chat_id) DO UPDATE
        SET rounds = c.rounds + EXCLUDED.rounds, updated_at = GREATEST(c.updated_at, EXCLUDED.updated_at),
          variables = COALESCE(EXCLUDED.variables, c.variables)
        RETURNING app_id, chat_id, rounds
      )
      INSERT INTO rounds (app_id, chat_id, seq, user_turn, assistant_turn, created_at)
      SELECT r.app_id, r.chat_id, chat.rounds - r.later, r.user_turn, r.assistant_turn, r.created_at
      FROM unnest($10::text[], $11::text[], $12::bigint[], $13::text[], $14::text[], $15::bigint[]) AS r (app_id, chat_id, later, user_turn, assistant_turn, created_at)
      JOIN chat ON chat.app_id = r.app_id AND chat.chat_id = r.chat_id`,
  },
  listChats: {
    name: "list-chats",
    text: `SELECT chat_id, title, updated_at FROM chats WHERE share_id = $1 AND uid = $2 AND updated_at >= $3
      ORDER BY updated_at DESC, id DESC LIMIT $4`,
  },
  // a batch's usage rows, and its points added once per scope (scopes in one order, see spendOf)
  recordUsage: {
    name: "record-usage",
    text: `WITH inserted AS (
        INSERT INTO usage (time, app_id, key_name, share_id, model, channel, input_tokens, output_tokens, points, status, duration_ms, chat_id)
        SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
          $9::numeric[], $10::integer[], $11::bigint[], $12::text[])
      )
      INSERT INTO spend (scope, points) SELECT * FROM unnest($13::text[], $14::float8[])
      ON CONFLICT (scope) DO UPDATE SET points = spend.points + EXCLUDED.points`,
  },
  getSpent: { name: "get-spent", text: `SELECT points FROM spend WHERE scope = $1` },
  // one scan for the totals, the apps and the models; names in byte order like SQLite's BINARY
  summarizeUsage: {
    text: `SELECT GROUPING(app_id, model) AS level, app_id, model, COUNT(*) AS requests,
        COALESCE(SUM(input_tokens), 0)::bigint AS "inputTokens", COALESCE(SUM(output_tokens), 0)::bigint AS "outputTokens",
        COALESCE(SUM(points), 0)::float8 AS points
      FROM usage WHERE time >= $1 AND time < $2 AND ($3::text IS NULL OR app_id = $3)
      GROUP BY GROUPING SETS ((), (app_id), (model))
      ORDER BY app_id COLLATE "C", model COLLATE "C"`,
  },
};

/** A round as the batch writes it: variables as JSON text, or null to keep the chat's. */
type RoundWrite = Omit<AppendRoundInput, "variables"> & { kind: "round"; variables: string | null };
/** A write that waits for the next batch (postgres-write-batch.ts). */
type BatchedWrite = RoundWrite | { kind: "usage"; row: UsageRow; scopes: string[] };
type Writes = PgWriteBatcher<BatchedWrite>;

export function createPostgresStore(url: string): Store {
  const db = createPgPool(url);
  const writes = createPgWriteBatcher(db, statementsOf);
  return {
    ...createChatOps(db, writes),
    ...createUsageOps(db, writes),
    ...createPgKeyOps(db),
    ping: () => db.ping(),
    async close() {
      await writes.settled();
      await db.close();
    },
  };
}

/** One batch's statements. Rows are locked in one order by every instance, so two batches never wait
 *  for each other in a cycle: chats by (app, chat) (a chat's rounds keep the order they came in),
 *  then the spend counters by scope. */
function statementsOf(batch: BatchedWrite[]): PgWrite[] {
  // a stable sort: a chat's rounds keep their order
  const rounds = batch.filter((w) => w.kind === "round").sort((a, b) => compare(a.appId, b.appId) || compare(a.chatId, b.chatId));
  const statements: PgWrite[] = rounds.length > 0 ? [{ q: SQL.appendRounds, values: roundsValues(rounds) }] : [];
  const usage = batch.filter((w) => w.kind === "usage");
  if (usage.length > 0) statements.push({ q: SQL.recordUsage, values: usageValues(usage) });
  return statements;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The chats of `rounds` (sorted by chat), one array per column, then their rounds: each with how
 *  many of its chat's rounds in the batch come after it. */
function roundsValues(rounds: RoundWrite[]): unknown[] {
  const chats: unknown[][] = Array.from({ length: 9 }, () => []);
  const turns: unknown[][] = Array.from({ length: 6 }, () => []);
  for (let start = 0, end = 0; start < rounds.length; start = end) {
    const first = rounds[start]!;
    while (end < rounds.length && rounds[end]!.appId === first.appId && rounds[end]!.chatId === first.chatId) end++;
    let updatedAt = first.at;
    let variables: string | null = null;
    for (let i = start; i < end; i++) {
      const { appId, chatId, user, assistant, at } = rounds[i]!;
      updatedAt = Math.max(updatedAt, at);
      variables = rounds[i]!.variables ?? variables;
      [appId, chatId, end - 1 - i, user, assistant, at].forEach((v, column) => turns[column]!.push(v));
    }
    const { appId, chatId, owner, user, at } = first;
    [appId, chatId, owner?.shareId ?? null, owner?.uid ?? null, titleFrom(user), at, updatedAt, end - start, variables].forEach((v, column) => chats[column]!.push(v));
  }
  return [...chats, ...turns];
}

/** The usage rows as one array per column, then the scopes (sorted) and the points each gets. */
function usageValues(usage: Array<{ row: UsageRow; scopes: string[] }>): unknown[] {
  const columns: unknown[][] = Array.from({ length: 12 }, () => []);
  const spend = new Map<string, number>();
  for (const { row, scopes } of usage) {
    const { time, appId, keyName, shareId, model, channel, inputTokens, outputTokens, points, status, durationMs, chatId } = row;
    [time, appId, keyName, shareId, model, channel, inputTokens, outputTokens, points, status, durationMs, chatId].forEach((v, i) => columns[i]!.push(v));
    // a scope named twice is still one budget; a free answer changes no counter
    if (points === 0) continue;
    for (const scope of new Set(scopes)) spend.set(scope, (spend.get(scope) ?? 0) + points);
  }
  const scopes = [...spend.keys()].sort();
  return [...columns, scopes, scopes.map((scope) => spend.get(scope))];
}

function chatInfoOf(chatId: string, row: ChatRow): ChatInfo {
  const owner = row.share_id !== null && row.uid !== null ? { shareId: row.share_id, uid: row.uid } : null;
  const info: ChatInfo = { chatId, owner, title: row.title, updatedAt: row.updated_at };
  if (row.variables) info.variables = JSON.parse(row.variables) as Record<string, unknown>;
  return info;
}

/** A round holds two messages: the rounds that hold the last `count` messages. */
const roundsFor = (count: number) => Math.ceil(count / 2);

function pushRound(messages: ChatMessage[], user: string, assistant: string, createdAt: number): void {
  messages.push({ role: "user", content: user, createdAt }, { role: "assistant", content: assistant, createdAt });
}

function createChatOps(db: PgPool, writes: Writes) {
  const readChat = createPgReadBatcher(async (keys: ChatKey[]): Promise<Array<ChatWithRounds | undefined>> => {
    const columns = [keys.map((k) => k.appId), keys.map((k) => k.chatId), keys.map((k) => k.rounds)];
    const found = await db.read<ChatWithRounds & { i: number }>(SQL.getChatsWithRounds, columns);
    const answers = new Array<ChatWithRounds | undefined>(keys.length);
    for (const row of found) answers[row.i - 1] = row;
    return answers;
  });
  return {
    async getChat(appId: string, chatId: string): Promise<ChatInfo | undefined> {
      const [row] = await db.read<ChatRow>(SQL.getChat, [appId, chatId]);
      return row && chatInfoOf(chatId, row);
    },
    async loadMessages(appId: string, chatId: string, limit: number): Promise<ChatMessage[]> {
      const count = Math.floor(limit);
      if (!(count > 0)) return [];
      const rounds = await db.read<RoundRow>(SQL.lastRounds, [appId, chatId, roundsFor(count)]);
      const messages: ChatMessage[] = [];
      for (let i = rounds.length - 1; i >= 0; i--) pushRound(messages, rounds[i]!.user_turn, rounds[i]!.assistant_turn, rounds[i]!.created_at);
      return messages.length > count ? messages.slice(-count) : messages;
    },
    async getChatWithMessages(appId: string, chatId: string, limit: number): Promise<ChatWithMessages | undefined> {
      const count = Math.max(Math.floor(limit), 0) || 0;
      const row = await readChat({ appId, chatId, rounds: roundsFor(count) });
      if (!row) return undefined;
      const messages: ChatMessage[] = [];
      for (const [user, assistant, at] of row.rounds ?? []) pushRound(messages, unescapeText(user), unescapeText(assistant), at);
      return { chat: chatInfoOf(chatId, row), messages: messages.length > count ? messages.slice(-count) : messages };
    },
    appendRound(input: AppendRoundInput): Promise<void> {
      const variables = input.variables ? JSON.stringify(input.variables) : null;
      const { appId, chatId, owner, user, assistant, at } = input;
      return writes.write({ kind: "round", appId, chatId, owner, user, assistant, at, variables });
    },
    async listChats(owner: ChatOwner, opts: { since: number; limit: number }): Promise<ChatSummary[]> {
      const count = Math.floor(opts.limit);
      if (!(count > 0)) return [];
      const rows = await db.read<{ chat_id: string; title: string; updated_at: number }>(SQL.listChats, [owner.shareId, owner.uid, asEpoch(opts.since), count]);
      return rows.map((c) => ({ chatId: c.chat_id, title: c.title, updatedAt: c.updated_at }));
    },
  };
}

function createUsageOps(db: PgPool, writes: Writes) {
  return {
    recordUsage: (row: UsageRow, scopes: string[]): Promise<void> => writes.write({ kind: "usage", row, scopes }),
    async summarizeUsage(query: UsageQuery): Promise<UsageSummary> {
      const from = asEpoch(query.from ?? Number.MIN_SAFE_INTEGER);
      const to = asEpoch(query.to ?? Number.MAX_SAFE_INTEGER);
      const rows = await db.report<SummaryRow>(SQL.summarizeUsage, [from, to, query.appId ?? null]);
      const totalsOf = ({ requests, inputTokens, outputTokens, points }: SummaryRow): UsageTotals => ({ requests, inputTokens, outputTokens, points });
      return {
        totals: totalsOf(rows.find((r) => r.level === 3)!),
        apps: rows.filter((r) => r.level === 1).map((r) => ({ appId: r.app_id!, ...totalsOf(r) })),
        models: rows.filter((r) => r.level === 2).map((r) => ({ model: r.model!, ...totalsOf(r) })),
      };
    },
    async getSpent(scope: string): Promise<number> {
      const [row] = await db.read<{ points: number }>(SQL.getSpent, [scope]);
      return row?.points ?? 0;
    },
  };
}

/** Epoch-ms bounds compared with integer columns: `t >= x` holds exactly when `t >= ceil(x)` (and
 *  `t < x` when `t < ceil(x)`), as SQLite compares them; kept within the range times can have. */
function asEpoch(ms: number): number {
  return Math.min(Math.max(Math.ceil(ms), Number.MIN_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
}
