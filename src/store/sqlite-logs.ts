// The SQLite half of the Store that reads usage rows as FastGPT's call logs and dashboard read them
// (docs/fastgpt.md#call-logs): a search with its count, per-minute sums, and the bodies kept of a request.
import type Database from "better-sqlite3";
import { BODIES_OF_ROW, PURGE_EVERY, PURGE_ROWS } from "./rows.js";
import type { LoggedBodies, MinuteUsage, UsageRecord, UsageSearch } from "./types.js";

interface Params {
  from: number;
  to: number;
  requestId: string | null;
  channelId: number | null;
  channelName: string | null;
  model: string | null;
  status: number | null;
  success: number | null;
  appId: string | null;
  keyName: string | null;
}

/** One filter for every search: a field given narrows it, null does not. */
const WHERE = `WHERE time >= @from AND time <= @to
  AND (@requestId IS NULL OR request_id = @requestId)
  AND (@channelId IS NULL OR channel_id = @channelId OR (channel_id IS NULL AND channel = @channelName))
  AND (@model IS NULL OR model = @model)
  AND (@status IS NULL OR status = @status)
  AND (@success IS NULL OR (status = 200) = (@success = 1))
  AND (@appId IS NULL OR app_id = @appId)
  AND (@keyName IS NULL OR key_name = @keyName)`;

const RECORD = `id, time, app_id AS appId, key_name AS keyName, share_id AS shareId, model, channel,
  input_tokens AS inputTokens, output_tokens AS outputTokens, points, status, duration_ms AS durationMs,
  chat_id AS chatId, finish_reason AS finishReason, request_id AS requestId, endpoint,
  channel_id AS channelId, attempts, ttfb_ms AS ttfbMs, error, cached_tokens AS cachedTokens, user,
  batch_id AS batchId, custom_id AS customId`;

const ORDER = { time: "time", request_at: "time - duration_ms", id: "id" } as const;

export function createLogOps(db: Database.Database) {
  const count = db.prepare<Params, { total: number }>(`SELECT COUNT(*) AS total FROM usage ${WHERE}`);
  const pages = new Map<string, Database.Statement<[Params & { limit: number; offset: number }], UsageRecord>>();
  const page = (by: keyof typeof ORDER, desc: boolean) => {
    const key = `${by}:${desc}`;
    let statement = pages.get(key);
    if (!statement) {
      const dir = desc ? "DESC" : "ASC";
      statement = db.prepare(`SELECT ${RECORD} FROM usage ${WHERE} ORDER BY ${ORDER[by]} ${dir}, id ${dir} LIMIT @limit OFFSET @offset`);
      pages.set(key, statement);
    }
    return statement;
  };
  const minutes = db.prepare<Params, MinuteUsage>(
    `SELECT (time / 60000) * 60000 AS minute, channel_id AS channelId, channel, model, COUNT(*) AS requests,
       SUM(status <> 200) AS exceptions, SUM(coalesce(attempts, 1) > 1) AS retries,
       SUM(status >= 400 AND status < 500) AS status4xx, SUM(status >= 500) AS status5xx,
       SUM(input_tokens) AS inputTokens, SUM(output_tokens) AS outputTokens, SUM(points) AS points,
       SUM(duration_ms) AS durationMs, SUM(coalesce(ttfb_ms, 0)) AS ttfbMs,
       SUM(cached_tokens) AS cachedTokens, SUM(cached_tokens > 0) AS cacheHits
     FROM usage ${WHERE}
     GROUP BY minute, channel_id, channel, model ORDER BY minute, model, channel`,
  );

  return {
    async searchUsage(q: UsageSearch): Promise<{ rows: UsageRecord[]; total: number }> {
      const params = paramsOf(q);
      const rows = page(q.order.by, q.order.desc).all({ ...params, limit: q.limit, offset: q.offset });
      return { rows, total: count.get(params)!.total };
    },
    async usageByMinute(q: Pick<UsageSearch, "from" | "to" | "channel" | "model">): Promise<MinuteUsage[]> {
      return minutes.all(paramsOf(q));
    },
  };
}

function paramsOf(q: Partial<UsageSearch> & Pick<UsageSearch, "from" | "to">): Params {
  const status = q.status;
  return {
    from: q.from,
    to: q.to,
    requestId: q.requestId ?? null,
    channelId: q.channel?.id ?? null,
    channelName: q.channel?.name ?? null,
    model: q.model ?? null,
    status: typeof status === "number" ? status : null,
    success: status === "success" ? 1 : status === "error" ? 0 : null,
    appId: q.appId ?? null,
    keyName: q.keyName ?? null,
  };
}

/** Bodies wait this long in memory for others, then go to the file together, in a transaction of
 *  their own: a commit writes every page its rows touched, so a batch of hundreds costs each row a
 *  fraction of what the request path's batches of a few would (docs/fastgpt.md#bodies). */
const BODIES_WAIT_MS = 100;
/** ...or less, once this many characters wait: what they hold in memory stays bounded */
const BODIES_WAIT_CHARS = 4 * 1024 * 1024;

/** Bodies waiting for their batch, and the promise they all get: settled with its commit. */
interface BodiesBatch {
  rows: LoggedBodies[];
  chars: number;
  committed: Promise<void>;
  settle: (err?: unknown) => void;
}

/** A request's bodies, written in batches of their own, and read by their usage row. */
export function createBodyOps(db: Database.Database) {
  const sql = {
    save: db.prepare<[string, number, string, string, number, number, number]>(
      `INSERT INTO usage_bodies (bodies_key, time, request, response, request_truncated, response_truncated, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (time, bodies_key) DO NOTHING`,
    ),
    // the oldest first, along the key: rows older than the retention the newest were saved with
    purge: db.prepare<[number]>(`DELETE FROM usage_bodies WHERE rowid IN (SELECT rowid FROM usage_bodies WHERE time <= ? ORDER BY time LIMIT ${PURGE_ROWS})`),
    get: db.prepare<[number, number], BodyRow>(`SELECT b.* FROM usage u JOIN usage_bodies b ON ${BODIES_OF_ROW} WHERE u.id = ? AND b.expires_at > ?`),
  };
  let unpurged = 0;
  const commit = db.transaction((rows: LoggedBodies[]) => {
    for (const b of rows) sql.save.run(b.key, b.time, b.request, b.response, b.requestTruncated ? 1 : 0, b.responseTruncated ? 1 : 0, b.expiresAt);
    // PURGE_ROWS for every PURGE_EVERY rows written, until none is due (rows.ts)
    const last = rows[rows.length - 1]!;
    const cutoff = Date.now() - (last.expiresAt - last.time);
    unpurged += rows.length;
    while (unpurged >= PURGE_EVERY) {
      unpurged -= PURGE_EVERY;
      if (sql.purge.run(cutoff).changes < PURGE_ROWS) unpurged %= PURGE_EVERY;
    }
  });
  let batch: BodiesBatch | undefined;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    const done = batch;
    batch = timer = undefined;
    if (!done) return;
    try {
      commit.immediate(done.rows);
      done.settle();
    } catch (err) {
      done.settle(err);
    }
  };
  const open = (): BodiesBatch => {
    let settle!: BodiesBatch["settle"];
    const committed = new Promise<void>((resolve, reject) => (settle = (err) => (err === undefined ? resolve() : reject(err))));
    timer = setTimeout(flush, BODIES_WAIT_MS);
    return { rows: [], chars: 0, committed, settle };
  };
  return {
    /** Writes what waits now (the store closing). */
    flushBodies: flush,
    saveBodies(bodies: LoggedBodies): Promise<void> {
      const waiting = (batch ??= open());
      waiting.rows.push(bodies);
      waiting.chars += bodies.request.length + bodies.response.length;
      if (waiting.chars >= BODIES_WAIT_CHARS) flush();
      return waiting.committed;
    },
    async getBodies(usageId: number, now: number): Promise<LoggedBodies | undefined> {
      const row = sql.get.get(usageId, now);
      return row && { key: row.bodies_key, time: row.time, request: row.request, response: row.response, requestTruncated: row.request_truncated === 1, responseTruncated: row.response_truncated === 1, expiresAt: row.expires_at };
    },
  };
}

interface BodyRow {
  bodies_key: string;
  time: number;
  request: string;
  response: string;
  request_truncated: number;
  response_truncated: number;
  expires_at: number;
}
