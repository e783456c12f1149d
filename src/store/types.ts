// The store interface: conversations, share-link records, usage rows, spend counters, created keys,
// share-link uids and stored responses. SQLite (store/sqlite.ts, one process) and PostgreSQL
// (store/postgres.ts, shared by instances) implement it with the same behaviour:
// test/support/store-contract.ts holds them to it.
import type { BatchStore } from "./batch-types.js";
import type { UsageRow } from "./usage-row.js";

/** A chat made through an API key: the key's configured name (never the key). */
export interface KeyOwner {
  keyName: string;
}

/** A chat made by a share-link user. */
export interface ShareUser {
  shareId: string;
  uid: string;
}

/** Who created a chat, and so owns it (docs/store.md#chat-ownership). */
export type ChatOwner = KeyOwner | ShareUser;

export interface ChatMessage {
  role: "user" | "assistant";
  content: string;
  /** epoch milliseconds */
  createdAt: number;
}

export interface ChatInfo {
  chatId: string;
  /** null: made through an app key before creators were recorded, or opened by a caller of an app
   *  that shares its chats: any key of the app may use it, no share-link user may */
  owner: ChatOwner | null;
  /** the first user turn, cut to 60 characters; "" until the chat has a round */
  title: string;
  /** epoch milliseconds of the newest round; 0 until the chat has one */
  updatedAt: number;
  /** the chat's FastGPT variables; absent when it never had any */
  variables?: Record<string, unknown>;
}

export interface ChatSummary {
  chatId: string;
  title: string;
  updatedAt: number;
}

export interface OpenChatOptions {
  /** at most this many messages (the newest) */
  limit: number;
  /** at most this many bytes (UTF-8) of message content in all; Infinity: no bound */
  maxBytes: number;
  /** create the chat, owned by the caller, when it does not exist */
  create: boolean;
}

/** A chat as openChat finds it: its messages only for a caller it belongs to. */
export type OpenedChat =
  | { status: "owned"; chat: ChatInfo; messages: ChatMessage[] }
  | { status: "not_owned" }
  | { status: "missing" };

export interface AppendRoundInput {
  appId: string;
  chatId: string;
  /** who writes the round: the chat's owner when this round creates it */
  owner: ChatOwner;
  /** the app shares its chats: the round is written whoever owns the chat */
  shared?: boolean;
  user: string;
  assistant: string;
  /** epoch milliseconds of the answer */
  at: number;
  /** when given, the chat's variables from now on (the caller merged them with the stored ones) */
  variables?: Record<string, unknown>;
}

export type { UsageRow } from "./usage-row.js";

export interface UsageTotals {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  points: number;
}

export interface UsageSummary {
  totals: UsageTotals;
  apps: Array<UsageTotals & { appId: string }>;
  models: Array<UsageTotals & { model: string }>;
  /** only with `groupBy: "finishReason"`; null (rows without one) first, then by the name's bytes */
  finishReasons?: Array<UsageTotals & { finishReason: string | null }>;
}

export interface UsageQuery {
  /** epoch milliseconds, inclusive */
  from?: number;
  /** epoch milliseconds, exclusive */
  to?: number;
  appId?: string;
  groupBy?: "finishReason";
}

/** A usage row as FastGPT's call logs read it (docs/fastgpt.md#call-logs). */
export interface UsageRecord extends UsageRow {
  id: number;
}

/** Usage rows matching every given field; `time` in [from, to], both inclusive. */
export interface UsageSearch {
  from: number;
  to: number;
  requestId?: string;
  /** a channel by its number, or (rows written before numbers) by its name */
  channel?: { id: number; name: string };
  model?: string;
  /** exact status; `success`: 200; `error`: any other */
  status?: number | "success" | "error";
  appId?: string;
  keyName?: string;
  order: { by: "time" | "request_at" | "id"; desc: boolean };
  limit: number;
  offset: number;
}

/** What a request sent and was answered, kept for FastGPT's log detail (docs/fastgpt.md#bodies):
 *  redacted and cut before it reaches the store. Found by its usage row's bodies key and time (rows
 *  written before bodies keys: by their request id, where no other row has it at that time). */
export interface LoggedBodies {
  /** the usage row's `bodiesKey` */
  key: string;
  /** the usage row's time */
  time: number;
  request: string;
  response: string;
  requestTruncated: boolean;
  responseTruncated: boolean;
  /** epoch ms: from then on the bodies are gone (purged a few at a time) */
  expiresAt: number;
}

/** Usage rows of one minute, one channel and one model, summed (the dashboard's unit). */
export interface MinuteUsage {
  /** epoch ms of the minute's start */
  minute: number;
  channelId: number | null;
  channel: string;
  model: string;
  requests: number;
  /** status ≠ 200 */
  exceptions: number;
  /** attempts > 1 */
  retries: number;
  status4xx: number;
  status5xx: number;
  inputTokens: number;
  outputTokens: number;
  points: number;
  durationMs: number;
  ttfbMs: number;
  /** prompt tokens served from the model server's prefix cache, and the rows that had any */
  cachedTokens: number;
  cacheHits: number;
}

/** A usage row's columns the usage report groups by (docs/api.md#usage). */
export type UsageColumn = "app" | "model" | "key" | "share" | "user" | "finishReason";

export interface UsageGroupsQuery {
  /** epoch milliseconds, inclusive */
  from?: number;
  /** epoch milliseconds, exclusive */
  to?: number;
  appId?: string;
  /** the columns grouped by, in this order (none: one group of all rows) */
  by: UsageColumn[];
  /** also grouped by time / bucketMs (rounded down), when given */
  bucketMs?: number;
}

export interface UsageGroup extends UsageTotals {
  /** the group's value of each column of `by`, in its order (null: rows without one) */
  values: Array<string | null>;
  /** the group's time bucket (epoch ms / bucketMs, rounded down), when asked for */
  bucket?: number;
  /** of inputTokens: those the upstream served from its prefix cache */
  cachedTokens: number;
}

/** A key created through the operations API (docs/operations.md#keys-api): never the key, only its digest. */
export interface CreatedKeyRow {
  name: string;
  kind: "app" | "global";
  appId: string | null;
  /** sha256 hex digest of the key */
  sha256: string;
  /** -1: no budget */
  maxUsagePoints: number;
  /** 0: no rate limit */
  qpm: number;
  /** tokens a minute; 0 (or absent): no limit */
  tpm?: number;
  /** points a period; -1 (or absent): no budget */
  periodPoints?: number;
  period?: "day" | "week" | "month";
  /** epoch milliseconds; null (or absent): never expires */
  expiresAt?: number | null;
  /** epoch milliseconds */
  createdAt: number;
  revokedAt: number | null;
}

export interface KeyUse {
  name: string;
  /** epoch milliseconds */
  lastUsedAt: number;
}

/** A Responses API response kept for `previous_response_id` and GET/DELETE (docs/store.md#responses). */
export interface StoredResponse {
  id: string;
  appId: string;
  keyName: string | null;
  /** epoch milliseconds */
  createdAt: number;
  /** epoch milliseconds: from then on the response is gone */
  expiresAt: number;
  previousId: string | null;
  /** JSON text of the input items */
  input: string;
  /** JSON text of the response object */
  output: string;
}

/** What the store keeps of a channel for FastGPT's AI Proxy API (docs/fastgpt.md#channels): its
 *  number, whether it is enabled, and the record written through the API over config.json's. */
export interface ChannelRecord {
  id: number;
  /** a config.json channel's name, or `api:<uuid>` for one created through the API (renames keep it) */
  ref: string;
  /** JSON text of the channel as written through the API; null: config.json's channel as it is */
  record: string | null;
  /** deleted through the API (a config channel's tombstone) */
  deleted: boolean;
  /** 1 enabled, 2 disabled */
  status: number;
  /** epoch milliseconds: first seen in config.json, or created through the API */
  createdAt: number;
}

/** A channel the store has not seen yet: `id` when config.json gives one, else the store's next. */
export interface NewChannelRecord {
  ref: string;
  id?: number;
  record: string | null;
  status: number;
  createdAt: number;
}

export interface ChannelWrite {
  ref: string;
  record: string | null;
  deleted: boolean;
}

export interface Store {
  /** The chat and its newest messages (oldest first), for a caller it belongs to. `who` null: the
   *  app shares its chats, no owner check. Otherwise the owner is checked before any message is
   *  read; with `create`, a missing chat is created owned by `who` (by nobody when `who` is null),
   *  and of concurrent creators with different owners exactly one owns it. `limit` bounds the
   *  messages (a cut through a round keeps its assistant turn, as the limit counts messages);
   *  `maxBytes` drops whole rounds, oldest first, so a history never starts with an answer whose
   *  question was dropped for size. */
  openChat(appId: string, chatId: string, who: ChatOwner | null, opts: OpenChatOptions): Promise<OpenedChat>;
  /** Stores the user turn and the assistant turn atomically; creates the chat (owned by
   *  input.owner) when it does not exist yet, titles it at its first round, moves its updatedAt and
   *  replaces its variables when given. Resolves false, writing nothing, when the chat belongs to
   *  someone else and the input is not `shared`. Concurrent calls lose no turn. */
  appendRound(input: AppendRoundInput): Promise<boolean>;
  /** A share-link user's chats with at least one round, updated at or after `since`, newest first,
   *  at most `limit`. */
  listChats(owner: ShareUser, opts: { since: number; limit: number }): Promise<ChatSummary[]>;
  /** Inserts one usage row and adds its points to every named spend scope, in one transaction. */
  recordUsage(row: UsageRow, spendScopes: string[]): Promise<void>;
  summarizeUsage(query: UsageQuery): Promise<UsageSummary>;
  /** The totals of the usage rows of a time range per value of the columns asked (docs/api.md#usage),
   *  in no particular order. */
  groupUsage(query: UsageGroupsQuery): Promise<UsageGroup[]>;
  /** Points spent so far by a scope (`app:<id>`, `key:<name>`, `share:<shareId>`). */
  getSpent(scope: string): Promise<number>;
  /** Every created key, revoked ones too, oldest first. */
  listCreatedKeys(): Promise<CreatedKeyRow[]>;
  /** The created key with this sha256 digest (hex), revoked or not; undefined when none has it. */
  findCreatedKey(sha256: string): Promise<CreatedKeyRow | undefined>;
  /** Adds a created key; false (nothing written) when a created key already has the name. */
  createKey(row: CreatedKeyRow): Promise<boolean>;
  /** Marks a created key revoked at `at` (a second revoke keeps the first time); the row after,
   *  or undefined when no created key has the name. */
  revokeKey(name: string, at: number): Promise<CreatedKeyRow | undefined>;
  /** Moves keys' lastUsedAt forward (never back), in one transaction. */
  recordKeyUse(uses: KeyUse[]): Promise<void>;
  /** lastUsedAt of every key used so far (config and created keys). */
  listKeyUse(): Promise<KeyUse[]>;
  /** Remembers the uid a share link's init callback gave for a token (by its digest, never the
   *  token); a later `at` replaces it. Rows older than 30 days are purged now and then. */
  rememberShareUid(shareId: string, tokenDigest: string, uid: string, at: number): Promise<void>;
  /** The uid remembered for the token's digest at or after `since`, or undefined. */
  findShareUid(shareId: string, tokenDigest: string, since: number): Promise<string | undefined>;
  /** Keeps a response (replacing one of the same app and id). Expired rows are purged now and then. */
  saveResponse(row: StoredResponse): Promise<void>;
  /** The app's response, or undefined when missing, of another app, or expired at `now`; with
   *  `keyName`, only a response that key made (an app that does not share its chats). */
  getResponse(appId: string, id: string, now: number, keyName?: string): Promise<StoredResponse | undefined>;
  /** Deletes the app's response (with `keyName`: only one that key made) and every response of the
   *  app continued from it, at any depth (their input holds its conversation); false when there was
   *  none live at `now` (default: the clock). */
  deleteResponse(appId: string, id: string, now?: number, keyName?: string): Promise<boolean>;
  /** The app's live responses at `now`: how many, and their UTF-8 bytes (input and output). */
  responseUsage(appId: string, now: number): Promise<{ rows: number; bytes: number }>;
  /** The usage rows of a search, one page of them, and how many match in all. */
  searchUsage(query: UsageSearch): Promise<{ rows: UsageRecord[]; total: number }>;
  /** The usage rows with `time` in [from, to] (both inclusive), summed per minute, channel and model. */
  usageByMinute(query: Pick<UsageSearch, "from" | "to" | "channel" | "model">): Promise<MinuteUsage[]>;
  /** Keeps a request's bodies; those past their time are purged now and then. */
  saveBodies(bodies: LoggedBodies): Promise<void>;
  /** The bodies of the usage row with this id, or undefined when none were kept or they expired at `now`. */
  getBodies(usageId: number, now: number): Promise<LoggedBodies | undefined>;
  /** Every channel record, by id. */
  listChannelRecords(): Promise<ChannelRecord[]>;
  /** Adds the records whose ref the store has not seen, each with its given id or the next one
   *  past every id used so far; a given id already taken leaves that record out. The records added. */
  addChannelRecords(rows: NewChannelRecord[]): Promise<ChannelRecord[]>;
  /** Replaces channels' records and tombstones (null, false: config.json's again), all in one
   *  transaction; refs the store does not know are left out. */
  writeChannelRecords(writes: ChannelWrite[]): Promise<void>;
  /** Sets the status of the channels with these ids; the ids that exist. */
  setChannelStatus(ids: number[], status: number): Promise<number[]>;
  /** files, batches and their lines (docs/batches.md#durability) */
  batches: BatchStore;
  /** Resolves when the store answers; rejects otherwise (used by /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
