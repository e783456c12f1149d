// What both stores make of their rows the same way: a chat's title, its owner columns and who may use
// it, the newest messages of its rounds within a count and a byte bound, a usage row's values and
// what it adds to the budgets, a stored response's bytes, and how long records last.
import type { ChatInfo, ChatMessage, ChatOwner, StoredResponse, UsageColumn, UsageGroup, UsageGroupsQuery, UsageRow } from "./types.js";

const TITLE_MAX_CHARS = 60;

/** docs/store.md#share-link-uids: a remembered uid is kept 30 days */
export const SHARE_UID_KEEP_MS = 30 * 24 * 60 * 60 * 1000;
/** Every PURGE_EVERY-th write to a table of records that expire also deletes up to PURGE_ROWS of
 *  those past their time: more than the writes add meanwhile, so the table stays bounded by its
 *  live rows, at a small cost per call. */
export const PURGE_EVERY = 16;
export const PURGE_ROWS = 256;

/** What a stored response takes against its app's quota: the UTF-8 bytes of its input and output
 *  (docs/store.md#responses). */
export function responseBytes(r: Pick<StoredResponse, "input" | "output">): number {
  return Buffer.byteLength(r.input, "utf8") + Buffer.byteLength(r.output, "utf8");
}

/** The first user turn, whitespace collapsed, cut to 60 characters (code points, not UTF-16 units). */
export function titleFrom(user: string): string {
  // only the head can reach the title: 60 code points of at most 2 UTF-16 units, with room for
  // runs of blanks that collapse
  const text = user.slice(0, TITLE_MAX_CHARS * 8).replace(/\s+/g, " ").trim();
  return text.length <= TITLE_MAX_CHARS ? text : Array.from(text).slice(0, TITLE_MAX_CHARS).join("");
}

/** The owner columns of a chat row: share_id, uid, key_name (all null: owned by nobody in particular). */
export function ownerColumns(owner: ChatOwner | null): [string | null, string | null, string | null] {
  if (owner === null) return [null, null, null];
  return "shareId" in owner ? [owner.shareId, owner.uid, null] : [null, null, owner.keyName];
}

export interface OwnerRow {
  share_id: string | null;
  uid: string | null;
  key_name: string | null;
}

export function ownerOf(row: OwnerRow): ChatOwner | null {
  if (row.share_id !== null && row.uid !== null) return { shareId: row.share_id, uid: row.uid };
  return row.key_name !== null ? { keyName: row.key_name } : null;
}

/** Whether `who` may read and write a chat of `owner`: its creator; a chat of nobody in particular
 *  (docs/store.md#chat-ownership) any key of the app, no share-link user. The postgres store's SQL
 *  (postgres-chats.ts, mayUse) says the same. */
export function mayUse(owner: ChatOwner | null, who: ChatOwner): boolean {
  if ("shareId" in who) return owner !== null && "shareId" in owner && owner.shareId === who.shareId && owner.uid === who.uid;
  return owner === null || ("keyName" in owner && owner.keyName === who.keyName);
}

export interface ChatRow extends OwnerRow {
  title: string;
  updated_at: number;
  /** JSON object, or null */
  variables: string | null;
}

export function chatInfoOf(chatId: string, row: ChatRow): ChatInfo {
  const info: ChatInfo = { chatId, owner: ownerOf(row), title: row.title, updatedAt: row.updated_at };
  if (row.variables) info.variables = JSON.parse(row.variables) as Record<string, unknown>;
  return info;
}

/** A round as stored: a user turn and its answer (SQLite keeps odd turns of old databases as
 *  rounds with one side). */
export interface StoredRound {
  user: string | null;
  assistant: string | null;
  createdAt: number;
}

export function messagesOf(r: StoredRound): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (r.user !== null) messages.push({ role: "user", content: r.user, createdAt: r.createdAt });
  if (r.assistant !== null) messages.push({ role: "assistant", content: r.assistant, createdAt: r.createdAt });
  return messages;
}

/** The newest messages of `rounds` (oldest first), oldest first: at most `limit` of them (the
 *  oldest round may lose its user turn to the count) and at most `maxBytes` of UTF-8 content, whole
 *  rounds only: a round that does not fit is dropped with everything older. */
export function newestMessages(rounds: readonly StoredRound[], limit: number, maxBytes: number): ChatMessage[] {
  const count = Math.floor(limit);
  if (!(count > 0)) return [];
  // NaN and Infinity: no bound
  const bounded = maxBytes < Number.MAX_SAFE_INTEGER;
  const picked: ChatMessage[][] = [];
  let taken = 0;
  let bytes = 0;
  for (let i = rounds.length - 1; i >= 0 && taken < count; i--) {
    const all = messagesOf(rounds[i]!);
    const some = all.length > count - taken ? all.slice(all.length - (count - taken)) : all;
    if (bounded) {
      bytes += some.reduce((sum, m) => sum + Buffer.byteLength(m.content, "utf8"), 0);
      if (bytes > maxBytes) break;
    }
    picked.push(some);
    taken += some.length;
  }
  return picked.reverse().flat();
}

/** The bodies of usage row `u` (`b`): by its bodies key; a row written before bodies keys, by its
 *  request id, which the client may have given to other calls too — so only where no other row
 *  has it at that time (docs/fastgpt.md#bodies). */
export const BODIES_OF_ROW = `b.time = u.time AND (b.bodies_key = u.bodies_key OR (u.bodies_key IS NULL AND b.bodies_key = u.request_id
  AND NOT EXISTS (SELECT 1 FROM usage o WHERE o.time = u.time AND o.request_id = u.request_id AND o.id <> u.id)))`;

/** The usage table's columns, in the order usageValues gives them. */
export const USAGE_COLUMNS = 24;

/** The usage table's columns as an INSERT names them (`user` quoted: a keyword in PostgreSQL). */
export const USAGE_INSERT_COLUMNS = `time, app_id, key_name, share_id, model, channel, input_tokens, output_tokens,
  points, status, duration_ms, chat_id, finish_reason, request_id, endpoint, channel_id, attempts, ttfb_ms, error, cached_tokens, "user", bodies_key,
  batch_id, custom_id`;

/** A usage row's values in column order: time, app_id, key_name, share_id, model, channel,
 *  input_tokens, output_tokens, points, status, duration_ms, chat_id, finish_reason, request_id,
 *  endpoint, channel_id, attempts, ttfb_ms, error, cached_tokens, user, bodies_key, batch_id, custom_id. */
export function usageValues(row: UsageRow): unknown[] {
  const { time, appId, keyName, shareId, model, channel, inputTokens, outputTokens, points, status, durationMs, chatId, finishReason, cachedTokens } = row;
  const { requestId = null, endpoint = null, channelId = null, attempts = null, ttfbMs = null, error = null, user = null, bodiesKey = null } = row;
  const { batchId = null, customId = null } = row;
  return [time, appId, keyName, shareId, model, channel, inputTokens, outputTokens, points, status, durationMs, chatId, finishReason, requestId, endpoint, channelId, attempts, ttfbMs, error, cachedTokens, user, bodiesKey, batchId, customId];
}

/** Adds a row's points to the spend of each budget it counts against: a scope named twice is still
 *  one budget; a free answer changes no counter. */
export function addSpend(spend: Map<string, number>, points: number, scopes: string[]): void {
  if (points === 0) return;
  for (const scope of new Set(scopes)) spend.set(scope, (spend.get(scope) ?? 0) + points);
}

/** The usage report's columns as both stores name them (`user` is quoted: a keyword in PostgreSQL). */
export const USAGE_GROUP_COLUMNS: Record<UsageColumn, string> = {
  app: "app_id",
  model: "model",
  key: "key_name",
  share: "share_id",
  user: `"user"`,
  finishReason: "finish_reason",
};

/** A groupUsage statement's grouping part: `g0, g1, …[, bucket]` selected and grouped by. */
export function usageGroupSql(q: Pick<UsageGroupsQuery, "by" | "bucketMs">): { select: string; groupBy: string } {
  const columns = q.by.map((c) => USAGE_GROUP_COLUMNS[c]);
  // bucketMs is a whole number the route chose (never a client's text)
  const bucket = q.bucketMs !== undefined ? [`time / ${Math.trunc(q.bucketMs)}`] : [];
  const select = [...columns.map((c, i) => `${c} AS g${i}`), ...bucket.map((b) => `${b} AS bucket`)];
  const groupBy = [...columns, ...bucket];
  return { select: select.map((s) => `${s}, `).join(""), groupBy: groupBy.length > 0 ? `GROUP BY ${groupBy.join(", ")}` : "" };
}

/** A groupUsage result row as a UsageGroup. */
export function usageGroupOf(row: Record<string, unknown>, q: Pick<UsageGroupsQuery, "by" | "bucketMs">): UsageGroup {
  const group: UsageGroup = {
    values: q.by.map((_, i) => (row[`g${i}`] ?? null) as string | null),
    requests: Number(row.requests),
    inputTokens: Number(row.inputTokens),
    outputTokens: Number(row.outputTokens),
    cachedTokens: Number(row.cachedTokens),
    points: Number(row.points),
  };
  if (q.bucketMs !== undefined) group.bucket = Number(row.bucket);
  return group;
}
