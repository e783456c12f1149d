// The PostgreSQL half of the Store that reads usage rows as FastGPT's call logs and dashboard read
// them, and keeps their bodies; the same behaviour as store/sqlite-logs.ts.
import type { PgPool, PgWrite } from "./postgres-pool.js";
import { createPgWriteBatcher } from "./postgres-write-batch.js";
import { BODIES_OF_ROW, PURGE_EVERY, PURGE_ROWS } from "./rows.js";
import type { LoggedBodies, MinuteUsage, UsageRecord, UsageSearch } from "./types.js";

/** One filter for every search: a field given narrows it, null does not. */
const WHERE = `WHERE time >= $1 AND time <= $2
  AND ($3::text IS NULL OR request_id = $3)
  AND ($4::bigint IS NULL OR channel_id = $4 OR (channel_id IS NULL AND channel = $5))
  AND ($6::text IS NULL OR model = $6)
  AND ($7::integer IS NULL OR status = $7)
  AND ($8::boolean IS NULL OR (status = 200) = $8)
  AND ($9::text IS NULL OR app_id = $9)
  AND ($10::text IS NULL OR key_name = $10)`;

const RECORD = `id, time, app_id AS "appId", key_name AS "keyName", share_id AS "shareId", model, channel,
  input_tokens AS "inputTokens", output_tokens AS "outputTokens", points::float8 AS points, status, duration_ms AS "durationMs",
  chat_id AS "chatId", finish_reason AS "finishReason", request_id AS "requestId", endpoint,
  channel_id AS "channelId", attempts, ttfb_ms AS "ttfbMs", error, cached_tokens AS "cachedTokens", "user",
  batch_id AS "batchId", custom_id AS "customId"`;

const ORDER = { time: "time", request_at: "time - duration_ms", id: "id" } as const;

const COUNT = { text: `SELECT COUNT(*)::bigint AS total FROM usage ${WHERE}` };
const MINUTES = {
  text: `SELECT (time / 60000) * 60000 AS minute, channel_id AS "channelId", channel, model, COUNT(*)::bigint AS requests,
      COUNT(*) FILTER (WHERE status <> 200)::bigint AS exceptions, COUNT(*) FILTER (WHERE coalesce(attempts, 1) > 1)::bigint AS retries,
      COUNT(*) FILTER (WHERE status >= 400 AND status < 500)::bigint AS "status4xx", COUNT(*) FILTER (WHERE status >= 500)::bigint AS "status5xx",
      SUM(input_tokens)::bigint AS "inputTokens", SUM(output_tokens)::bigint AS "outputTokens", SUM(points)::float8 AS points,
      SUM(duration_ms)::bigint AS "durationMs", SUM(coalesce(ttfb_ms, 0))::bigint AS "ttfbMs",
      SUM(cached_tokens)::bigint AS "cachedTokens", COUNT(*) FILTER (WHERE cached_tokens > 0)::bigint AS "cacheHits"
    FROM usage ${WHERE}
    GROUP BY 1, channel_id, channel, model ORDER BY 1, model COLLATE "C", channel COLLATE "C"`,
};

const BODIES = {
  // a batch's bodies in one statement
  save: {
    name: "save-bodies",
    text: `INSERT INTO usage_bodies (bodies_key, time, request, response, request_truncated, response_truncated, expires_at)
      SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::boolean[], $6::boolean[], $7::bigint[])
      ON CONFLICT (time, bodies_key) DO NOTHING`,
  },
  // the oldest first, along the key: rows older than the retention the newest were saved with;
  // rows another instance is deleting are skipped, not waited for
  purge: {
    name: "purge-bodies",
    text: `DELETE FROM usage_bodies WHERE (time, bodies_key) IN (
        SELECT time, bodies_key FROM usage_bodies WHERE time <= $1 ORDER BY time LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  },
  get: {
    text: `SELECT b.bodies_key AS "key", b.time, b.request, b.response, b.request_truncated AS "requestTruncated",
        b.response_truncated AS "responseTruncated", b.expires_at AS "expiresAt"
      FROM usage u JOIN usage_bodies b ON ${BODIES_OF_ROW} WHERE u.id = $1 AND b.expires_at > $2`,
  },
};

export function createPgLogOps(db: PgPool) {
  // bodies are group-committed as the request path's writes are (postgres-write-batch.ts), in
  // transactions of their own: a batch of them never holds up the rows the requests wait for
  let unpurged = 0;
  const bodies = createPgWriteBatcher<LoggedBodies>(db, (batch) => {
    const columns: unknown[][] = [[], [], [], [], [], [], []];
    for (const b of batch) [b.key, b.time, b.request, b.response, b.requestTruncated, b.responseTruncated, b.expiresAt].forEach((v, i) => columns[i]!.push(v));
    const writes: PgWrite[] = [{ q: BODIES.save, values: columns }];
    // PURGE_ROWS for every PURGE_EVERY rows written (rows.ts)
    if ((unpurged += batch.length) >= PURGE_EVERY) {
      const last = batch[batch.length - 1]!;
      writes.push({ q: BODIES.purge, values: [Date.now() - (last.expiresAt - last.time), PURGE_ROWS * Math.floor(unpurged / PURGE_EVERY)] });
      unpurged %= PURGE_EVERY;
    }
    return { writes };
  });
  return {
    /** Resolves once every body written so far has settled (the store closing). */
    bodiesSettled: bodies.settled,
    async saveBodies(b: LoggedBodies): Promise<void> {
      await bodies.write(b);
    },
    async getBodies(usageId: number, now: number): Promise<LoggedBodies | undefined> {
      const [row] = await db.read<LoggedBodies>(BODIES.get, [usageId, now]);
      return row;
    },
    async searchUsage(q: UsageSearch): Promise<{ rows: UsageRecord[]; total: number }> {
      const values = valuesOf(q);
      const dir = q.order.desc ? "DESC" : "ASC";
      const page = { text: `SELECT ${RECORD} FROM usage ${WHERE} ORDER BY ${ORDER[q.order.by]} ${dir}, id ${dir} LIMIT $11 OFFSET $12` };
      const [rows, [count]] = await Promise.all([db.report<UsageRecord>(page, [...values, q.limit, q.offset]), db.report<{ total: number }>(COUNT, values)]);
      return { rows, total: count?.total ?? 0 };
    },
    usageByMinute: (q: Pick<UsageSearch, "from" | "to" | "channel" | "model">) => db.report<MinuteUsage>(MINUTES, valuesOf(q)),
  };
}

function valuesOf(q: Partial<UsageSearch> & Pick<UsageSearch, "from" | "to">): unknown[] {
  const status = q.status;
  return [
    q.from,
    q.to,
    q.requestId ?? null,
    q.channel?.id ?? null,
    q.channel?.name ?? null,
    q.model ?? null,
    typeof status === "number" ? status : null,
    status === "success" ? true : status === "error" ? false : null,
    q.appId ?? null,
    q.keyName ?? null,
  ];
}
