// The SQLite Store: conversations, share-link chat lists, usage rows and spend counters persist in
// one database file (or `:memory:`); rate windows live in process memory, as they need not survive
// a restart.
import Database from "better-sqlite3";
import { migrate } from "./migrations.js";
import { CACHED_MESSAGES, createChatCache } from "./chat-cache.js";
import { createWriteBatcher, type Batched, type Gathered } from "./write-batch.js";
import { createKeyOps } from "./sqlite-keys.js";
import { createPrivateFile } from "./private-file.js";
import type {
  AppendRoundInput,
  ChatInfo,
  ChatMessage,
  ChatSummary,
  Store,
  UsageQuery,
  UsageRow,
  UsageSummary,
  UsageTotals,
} from "./types.js";

const TITLE_MAX_CHARS = 60;
const BUSY_TIMEOUT_MS = 5_000;

interface ChatRow {
  share_id: string | null;
  uid: string | null;
  title: string;
  updated_at: number;
  /** JSON object, or null */
  variables: string | null;
}
interface RoundRow {
  user: string | null;
  assistant: string | null;
  created_at: number;
}
interface SummaryRow extends UsageTotals {
  name: string;
}
interface UsageFilter {
  from: number;
  to: number;
  appId: string | null;
}
type Statements = ReturnType<typeof prepareStatements>;

export function createSqliteStore(path: string): Store {
  const db = openDatabase(path);
  const sql = prepareStatements(db);
  const usage = createUsageGatherer(db, sql);
  const batched = createWriteBatcher(db, [usage]);
  return {
    ...createChatOps(sql, batched),
    ...createUsageOps(sql, batched, usage),
    ...createKeyOps(db),
    async ping() {
      sql.ping.get();
    },
    async close() {
      if (db.open) db.close();
    },
  };
}

function openDatabase(path: string): Database.Database {
  const inMemory = path === ":memory:" || path === "";
  // SQLite gives the -wal and -shm files the database file's mode: 0600 for all three
  if (!inMemory && !path.startsWith("file:")) createPrivateFile(path);
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  // In WAL mode with synchronous=NORMAL a commit has written its frames to the WAL file (the OS
  // page cache) before it returns; only the fsync waits for checkpoints. So every committed
  // transaction survives `kill -9` of this process; only a power loss or OS crash can drop the
  // last commits. That is the durability we promise, at a fraction of the cost of FULL.
  db.pragma("synchronous = NORMAL");
  // Several gateway processes may share the file: wait for the writer instead of failing at once.
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  migrate(db);
  return db;
}

function prepareStatements(db: Database.Database) {
  const totals = `COUNT(*) AS requests, COALESCE(SUM(input_tokens), 0) AS inputTokens,
    COALESCE(SUM(output_tokens), 0) AS outputTokens, COALESCE(SUM(points), 0) AS points`;
  const filter = `WHERE time >= @from AND time < @to AND (@appId IS NULL OR app_id = @appId)`;
  const grouped = (column: string) =>
    db.prepare<UsageFilter, SummaryRow>(
      `SELECT ${column} AS name, ${totals} FROM usage ${filter} GROUP BY ${column} ORDER BY ${column}`,
    );
  return {
    getChat: db.prepare<[string, string], ChatRow>(
      `SELECT share_id, uid, title, updated_at, variables FROM chats WHERE app_id = ? AND chat_id = ?`,
    ),
    setVariables: db.prepare<[string, string, string]>(`UPDATE chats SET variables = ? WHERE app_id = ? AND chat_id = ?`),
    createChat: db.prepare<[string, string, string | null, string | null, string, number, number]>(
      `INSERT INTO chats (app_id, chat_id, share_id, uid, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (app_id, chat_id) DO NOTHING`,
    ),
    // links to the chat's newest round; the rounds_link trigger then makes the chat point at this one
    insertRound: db.prepare<[string, string, string, string, string, string, number]>(
      `INSERT INTO rounds (prev_id, app_id, chat_id, user, assistant, created_at)
       VALUES ((SELECT last_round_id FROM chats WHERE app_id = ? AND chat_id = ?), ?, ?, ?, ?, ?)`,
    ),
    // the newest `limit` rounds, walked back along the chain, returned oldest first
    lastRounds: db.prepare<[string, string, number], RoundRow>(
      `WITH RECURSIVE chain (id, prev_id, user, assistant, created_at, depth) AS (
         SELECT r.id, r.prev_id, r.user, r.assistant, r.created_at, 1
         FROM chats c JOIN rounds r ON r.id = c.last_round_id
         WHERE c.app_id = ? AND c.chat_id = ?
         UNION ALL
         SELECT r.id, r.prev_id, r.user, r.assistant, r.created_at, chain.depth + 1
         FROM chain JOIN rounds r ON r.id = chain.prev_id
         WHERE chain.depth < ?
       )
       SELECT user, assistant, created_at FROM chain ORDER BY id`,
    ),
    listChats: db.prepare<[string, string, number, number], { chat_id: string; title: string; updated_at: number }>(
      `SELECT chat_id, title, updated_at FROM chats
       WHERE share_id = ? AND uid = ? AND updated_at >= ?
       ORDER BY updated_at DESC, rowid DESC LIMIT ?`,
    ),
    addSpend: db.prepare<[string, number]>(
      `INSERT INTO spend (scope, points) VALUES (?, ?)
       ON CONFLICT (scope) DO UPDATE SET points = points + excluded.points`,
    ),
    getSpent: db.prepare<[string], { points: number }>(`SELECT points FROM spend WHERE scope = ?`),
    usageTotals: db.prepare<UsageFilter, UsageTotals>(`SELECT ${totals} FROM usage ${filter}`),
    usageByApp: grouped("app_id"),
    usageByModel: grouped("model"),
    ping: db.prepare(`SELECT 1`),
  };
}

function createChatOps(sql: Statements, batched: Batched) {
  const cache = createChatCache();
  const writeRound = batched((input: AppendRoundInput, variablesJson: string | undefined) => {
    const { appId, chatId, owner, at } = input;
    // the cache holds committed state only: a chat it knows exists needs no creating
    if (!cache.info(appId, chatId)) sql.createChat.run(appId, chatId, owner?.shareId ?? null, owner?.uid ?? null, titleFrom(input.user), at, at);
    sql.insertRound.run(appId, chatId, appId, chatId, input.user, input.assistant, at);
    if (variablesJson !== undefined) sql.setVariables.run(variablesJson, appId, chatId);
  }, cache.appended);
  // serialized when issued, not inside the batch's transaction, which holds the write lock
  const appendRound = (input: AppendRoundInput) => writeRound(input, input.variables && JSON.stringify(input.variables));

  const ops = {
    async getChat(appId: string, chatId: string): Promise<ChatInfo | undefined> {
      const cached = cache.info(appId, chatId);
      if (cached !== undefined) return cached ?? undefined;
      const row = sql.getChat.get(appId, chatId);
      const owner = row?.share_id != null && row.uid !== null ? { shareId: row.share_id, uid: row.uid } : null;
      const info: ChatInfo | null = row ? { chatId, owner, title: row.title, updatedAt: row.updated_at } : null;
      if (info && row?.variables) info.variables = JSON.parse(row.variables) as Record<string, unknown>;
      cache.setInfo(appId, chatId, info, row?.variables?.length);
      return info ?? undefined;
    },
    async loadMessages(appId: string, chatId: string, limit: number): Promise<ChatMessage[]> {
      const count = Math.floor(limit);
      if (!(count > 0)) return [];
      const cached = cache.messages(appId, chatId, count);
      if (cached) return cached;
      // a round holds one or two messages: `read` rounds give at least `read` messages when the chat has them
      const read = Math.max(count, CACHED_MESSAGES);
      const rounds = sql.lastRounds.all(appId, chatId, read);
      const messages = rounds.flatMap(messagesOf);
      if (read === CACHED_MESSAGES) {
        const kept = messages.slice(-CACHED_MESSAGES);
        cache.setMessages(appId, chatId, kept, rounds.length < read && kept.length === messages.length);
      }
      return messages.slice(-count);
    },
    async getChatWithMessages(appId: string, chatId: string, limit: number) {
      const chat = await ops.getChat(appId, chatId);
      return chat && { chat, messages: await ops.loadMessages(appId, chatId, limit) };
    },
    appendRound,
    async listChats(owner: { shareId: string; uid: string }, opts: { since: number; limit: number }): Promise<ChatSummary[]> {
      const count = Math.floor(opts.limit);
      if (!(count > 0)) return [];
      return sql.listChats
        .all(owner.shareId, owner.uid, opts.since, count)
        .map((c) => ({ chatId: c.chat_id, title: c.title, updatedAt: c.updated_at }));
    },
  };
  return ops;
}

const USAGE_COLUMNS = 12;
const MAX_ROWS_PER_INSERT = 32;

/** A batch's usage rows, inserted by multi-row INSERTs, and its spend, added once per scope: a
 *  statement costs about as much as the row it writes. */
function createUsageGatherer(db: Database.Database, sql: Statements): Gathered & { add(row: UsageRow, scopes: string[]): void } {
  // one prepared INSERT per row count, made when first needed (at most MAX_ROWS_PER_INSERT of them)
  const inserts = new Map<number, Database.Statement<unknown[]>>();
  const insert = (rows: number) => {
    let statement = inserts.get(rows);
    if (!statement) {
      // positional parameters: binding by name costs measurably more on the hot path
      const values = Array.from({ length: rows }, () => `(${Array(USAGE_COLUMNS).fill("?").join(", ")})`).join(", ");
      statement = db.prepare<unknown[]>(
        `INSERT INTO usage (time, app_id, key_name, share_id, model, channel, input_tokens, output_tokens,
           points, status, duration_ms, chat_id) VALUES ${values}`,
      );
      inserts.set(rows, statement);
    }
    return statement;
  };
  let values: unknown[] = [];
  const spend = new Map<string, number>();

  return {
    add(row, scopes) {
      const { time, appId, keyName, shareId, model, channel, inputTokens, outputTokens, points, status, durationMs, chatId } = row;
      values.push(time, appId, keyName, shareId, model, channel, inputTokens, outputTokens, points, status, durationMs, chatId);
      // a scope named twice is still one budget; a free answer changes no counter
      if (points === 0) return;
      scopes.forEach((scope, i) => {
        if (scopes.indexOf(scope) === i) spend.set(scope, (spend.get(scope) ?? 0) + points);
      });
    },
    flush() {
      const step = MAX_ROWS_PER_INSERT * USAGE_COLUMNS;
      for (let at = 0; at < values.length; at += step) {
        const part = values.length <= step ? values : values.slice(at, at + step);
        insert(part.length / USAGE_COLUMNS).run(part);
      }
      for (const [scope, points] of spend) sql.addSpend.run(scope, points);
      this.clear();
    },
    clear() {
      values = [];
      spend.clear();
    },
  };
}

function createUsageOps(sql: Statements, batched: Batched, usage: ReturnType<typeof createUsageGatherer>) {
  // gathered in the batch's transaction, written once at its end
  const recordUsage = batched((row: UsageRow, scopes: string[]) => usage.add(row, scopes));

  return {
    recordUsage,
    async summarizeUsage(query: UsageQuery): Promise<UsageSummary> {
      const filter: UsageFilter = {
        from: query.from ?? Number.MIN_SAFE_INTEGER,
        to: query.to ?? Number.MAX_SAFE_INTEGER,
        appId: query.appId ?? null,
      };
      const totals = sql.usageTotals.get(filter) ?? { requests: 0, inputTokens: 0, outputTokens: 0, points: 0 };
      return {
        totals: { ...totals },
        apps: sql.usageByApp.all(filter).map(({ name, ...t }) => ({ appId: name, ...t })),
        models: sql.usageByModel.all(filter).map(({ name, ...t }) => ({ model: name, ...t })),
      };
    },
    async getSpent(scope: string): Promise<number> {
      return sql.getSpent.get(scope)?.points ?? 0;
    },
  };
}

function messagesOf(r: RoundRow): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (r.user !== null) messages.push({ role: "user", content: r.user, createdAt: r.created_at });
  if (r.assistant !== null) messages.push({ role: "assistant", content: r.assistant, createdAt: r.created_at });
  return messages;
}

/** The first user turn, whitespace collapsed, cut to 60 characters (code points, not UTF-16 units). */
export function titleFrom(user: string): string {
  // only the head can reach the title: 60 code points of at most 2 UTF-16 units, with room for
  // runs of blanks that collapse
  const text = user.slice(0, TITLE_MAX_CHARS * 8).replace(/\s+/g, " ").trim();
  return text.length <= TITLE_MAX_CHARS ? text : Array.from(text).slice(0, TITLE_MAX_CHARS).join("");
}

/** 60-second sliding windows per scope; a refused hit is not counted. */
