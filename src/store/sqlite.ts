// The SQLite Store: conversations, share-link records, usage rows, spend counters and stored
// responses persist in one database file (or `:memory:`). Writes on the request path share
// transactions (write-batch.ts); a chat's head and last rounds are cached (chat-cache.ts).
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { createSqliteBatchStore } from "./sqlite-batches.js";
import { CACHED_MESSAGES, createChatCache, type ChatHead } from "./chat-cache.js";
import { migrate } from "./migrations.js";
import { chatInfoOf, mayUse, newestMessages, ownerColumns, ownerOf, titleFrom, type ChatRow, type StoredRound } from "./rows.js";
import { createChannelOps } from "./sqlite-channels.js";
import { createKeyOps } from "./sqlite-keys.js";
import { createBodyOps, createLogOps } from "./sqlite-logs.js";
import { createPrivateFile } from "./private-file.js";
import { createRecordOps } from "./sqlite-records.js";
import { createUsageGatherer, createUsageOps } from "./sqlite-usage.js";
import { createWriteBatcher, type Batched } from "./write-batch.js";
import type { AppendRoundInput, ChatMessage, ChatOwner, ChatSummary, OpenChatOptions, OpenedChat, ShareUser, Store } from "./types.js";

const BUSY_TIMEOUT_MS = 5_000;

type HeadRow = ChatRow & { last_round_id: number | null };
type OwnerColumns = ReturnType<typeof ownerColumns>;

export interface SqliteStoreOptions {
  /** where batch files' bytes go (docs/batches.md#durability); absent: a \`batches\` folder beside
   *  the database file, or the database itself for \`:memory:\` */
  batchesDir?: string;
}

export function createSqliteStore(path: string, opts: SqliteStoreOptions = {}): Store {
  const db = openDatabase(path);
  const usage = createUsageGatherer(db);
  const batched = createWriteBatcher(db, [usage]);
  const ping = db.prepare(`SELECT 1`);
  const { flushBodies, ...bodies } = createBodyOps(db);
  return {
    ...createChatOps(db, batched),
    ...createUsageOps(db, batched, usage),
    ...createKeyOps(db),
    ...createChannelOps(db),
    ...createLogOps(db),
    ...bodies,
    ...createRecordOps(db, batched),
    batches: createSqliteBatchStore(db, batched, usage, batchesDir(path, opts.batchesDir)),
    async ping() {
      ping.get();
    },
    async close() {
      flushBodies();
      if (db.open) db.close();
    },
  };
}

function batchesDir(path: string, dir: string | undefined): string | undefined {
  if (dir) return dir;
  if (path === ":memory:" || path === "" || path.startsWith("file:")) return undefined;
  return join(dirname(path), "batches");
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

function prepareChatStatements(db: Database.Database) {
  return {
    getChat: db.prepare<[string, string], HeadRow>(
      `SELECT share_id, uid, key_name, title, updated_at, variables, last_round_id FROM chats WHERE app_id = ? AND chat_id = ?`,
    ),
    createChat: db.prepare<[string, string, ...OwnerColumns, string, number, number]>(
      `INSERT INTO chats (app_id, chat_id, share_id, uid, key_name, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (app_id, chat_id) DO NOTHING`,
    ),
    // a chat opened before its first round is titled by that round
    setFirstTitle: db.prepare<[string, string, string]>(`UPDATE chats SET title = ? WHERE app_id = ? AND chat_id = ? AND last_round_id IS NULL`),
    setVariables: db.prepare<[string, string, string]>(`UPDATE chats SET variables = ? WHERE app_id = ? AND chat_id = ?`),
    // links to the chat's newest round; the rounds_link trigger then makes the chat point at this one
    insertRound: db.prepare<[string, string, string, string, string, string, number]>(
      `INSERT INTO rounds (prev_id, app_id, chat_id, user, assistant, created_at)
       VALUES ((SELECT last_round_id FROM chats WHERE app_id = ? AND chat_id = ?), ?, ?, ?, ?, ?)`,
    ),
    // the newest `limit` rounds, walked back along the chain, returned oldest first
    lastRounds: db.prepare<[string, string, number], { user: string | null; assistant: string | null; created_at: number }>(
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
       WHERE share_id = ? AND uid = ? AND updated_at >= ? AND last_round_id IS NOT NULL
       ORDER BY updated_at DESC, rowid DESC LIMIT ?`,
    ),
  };
}

function createChatOps(db: Database.Database, batched: Batched) {
  const sql = prepareChatStatements(db);
  const cache = createChatCache();

  /** The chat's head from the cache, else from the file (then cached). Never inside a batch's
   *  transaction: the cache holds committed state only. */
  function headOf(appId: string, chatId: string): ChatHead | null {
    const cached = cache.head(appId, chatId);
    if (cached !== undefined) return cached;
    const row = sql.getChat.get(appId, chatId);
    const head = row ? { info: chatInfoOf(chatId, row), empty: row.last_round_id === null } : null;
    cache.setHead(appId, chatId, head, row?.variables?.length);
    return head;
  }

  /** The chat's newest messages, from the cache when it holds enough of them. */
  function readMessages(appId: string, chatId: string, limit: number, maxBytes: number): ChatMessage[] {
    const count = Math.floor(limit);
    if (!(count > 0)) return [];
    const cached = cache.rounds(appId, chatId, count);
    if (cached) return newestMessages(cached, count, maxBytes);
    // a round holds one or two messages: `read` rounds give at least `read` messages when the chat has them
    const read = Math.max(count, CACHED_MESSAGES);
    const rounds: StoredRound[] = sql.lastRounds.all(appId, chatId, read).map((r) => ({ user: r.user, assistant: r.assistant, createdAt: r.created_at }));
    if (read === CACHED_MESSAGES) cache.setRounds(appId, chatId, rounds, rounds.length < read);
    return newestMessages(rounds, count, maxBytes);
  }

  const createEmpty = batched(
    (appId: string, chatId: string, who: ChatOwner | null, at: number): boolean =>
      sql.createChat.run(appId, chatId, ...ownerColumns(who), "", at, 0).changes === 1,
    (created, appId, chatId, who) => {
      if (created) cache.setHead(appId, chatId, { info: { chatId, owner: who, title: "", updatedAt: 0 }, empty: true });
      else cache.setHead(appId, chatId, undefined); // made meanwhile: read it again
    },
  );

  const writeRound = batched(
    (input: AppendRoundInput, variablesJson: string | undefined): boolean => {
      const { appId, chatId, at } = input;
      // the cache holds committed state only; a chat, once made, keeps its owner
      const known = cache.head(appId, chatId);
      let owner: ChatOwner | null = input.owner;
      let empty = false;
      if (known) {
        owner = known.info.owner;
        empty = known.empty;
      } else if (sql.createChat.run(appId, chatId, ...ownerColumns(input.owner), titleFrom(input.user), at, at).changes === 0) {
        const row = sql.getChat.get(appId, chatId)!;
        owner = ownerOf(row);
        empty = row.last_round_id === null;
      }
      if (!input.shared && !mayUse(owner, input.owner)) return false;
      if (empty) sql.setFirstTitle.run(titleFrom(input.user), appId, chatId);
      sql.insertRound.run(appId, chatId, appId, chatId, input.user, input.assistant, at);
      if (variablesJson !== undefined) sql.setVariables.run(variablesJson, appId, chatId);
      return true;
    },
    (written, input, variablesJson) => {
      if (written) cache.appended(input, variablesJson);
    },
  );

  return {
    async openChat(appId: string, chatId: string, who: ChatOwner | null, opts: OpenChatOptions): Promise<OpenedChat> {
      let head = headOf(appId, chatId);
      if (!head && opts.create) {
        await createEmpty(appId, chatId, who, Date.now());
        head = headOf(appId, chatId);
      }
      if (!head) return { status: "missing" };
      // the owner before any message: a caller the chat is not for reads nothing of it
      if (who !== null && !mayUse(head.info.owner, who)) return { status: "not_owned" };
      const messages = head.empty ? [] : readMessages(appId, chatId, opts.limit, opts.maxBytes);
      return { status: "owned", chat: head.info, messages };
    },
    // variables serialized when issued, not inside the batch's transaction, which holds the write lock
    appendRound: (input: AppendRoundInput) => writeRound(input, input.variables && JSON.stringify(input.variables)),
    async listChats(owner: ShareUser, opts: { since: number; limit: number }): Promise<ChatSummary[]> {
      const count = Math.floor(opts.limit);
      if (!(count > 0)) return [];
      return sql.listChats
        .all(owner.shareId, owner.uid, opts.since, count)
        .map((c) => ({ chatId: c.chat_id, title: c.title, updatedAt: c.updated_at }));
    },
  };
}
