// The PostgreSQL half of the Store that holds share-link uids (by token digest) and Responses API
// responses, read by every instance. Both tables are bounded as SQLite's are: every PURGE_EVERY-th
// write also deletes rows past their time (rows.ts), skipping rows another instance is deleting.
import type { PgPool, PgWrite } from "./postgres-pool.js";
import { PURGE_EVERY, PURGE_ROWS, SHARE_UID_KEEP_MS, responseBytes } from "./rows.js";
import type { StoredResponse } from "./types.js";

/** A response as the batch writes it; `purge`: its batch also deletes responses expired by its
 *  createdAt (every PURGE_EVERY-th save asks, rows.ts). */
export type ResponseWrite = { kind: "response"; row: StoredResponse; purge: boolean };

const REMEMBER_UID = `INSERT INTO share_uids (share_id, token_digest, uid, at) VALUES ($1, $2, $3, $4)
  ON CONFLICT (share_id, token_digest) DO UPDATE SET uid = EXCLUDED.uid, at = EXCLUDED.at WHERE share_uids.at <= EXCLUDED.at`;

const SQL = {
  rememberUid: { name: "remember-uid", text: REMEMBER_UID },
  // the row being written is left out of the purge: one statement may not change a row twice
  rememberUidAndPurge: {
    name: "remember-uid-purge",
    text: `WITH purged AS (
        DELETE FROM share_uids WHERE (share_id, token_digest) IN (
          SELECT share_id, token_digest FROM share_uids WHERE at < $5 AND NOT (share_id = $1 AND token_digest = $2)
          ORDER BY at LIMIT ${PURGE_ROWS} FOR UPDATE SKIP LOCKED)
      )
      ${REMEMBER_UID}`,
  },
  findUid: { name: "find-uid", text: `SELECT uid FROM share_uids WHERE share_id = $1 AND token_digest = $2 AND at >= $3` },
  // a batch's responses, one per (app, id), in that order (every instance locks them in one order)
  saveResponses: {
    name: "save-responses",
    text: `INSERT INTO responses (id, app_id, key_name, created_at, expires_at, previous_id, input, output, bytes)
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::bigint[])
      ON CONFLICT (app_id, id) DO UPDATE SET key_name = EXCLUDED.key_name, created_at = EXCLUDED.created_at,
        expires_at = EXCLUDED.expires_at, previous_id = EXCLUDED.previous_id, input = EXCLUDED.input, output = EXCLUDED.output,
        bytes = EXCLUDED.bytes`,
  },
  purgeResponses: {
    name: "purge-responses",
    text: `DELETE FROM responses WHERE (app_id, id) IN (
        SELECT app_id, id FROM responses WHERE expires_at <= $1 ORDER BY expires_at LIMIT ${PURGE_ROWS} FOR UPDATE SKIP LOCKED)`,
  },
  getResponse: {
    name: "get-response",
    text: `SELECT id, app_id AS "appId", key_name AS "keyName", created_at AS "createdAt", expires_at AS "expiresAt",
        previous_id AS "previousId", input, output
      FROM responses WHERE app_id = $1 AND id = $2 AND expires_at > $3 AND ($4::text IS NULL OR key_name = $4)`,
  },
  // the response, if the caller's, and every response continued from it
  deleteResponse: {
    name: "delete-response",
    text: `WITH RECURSIVE chain(id) AS (
        SELECT id FROM responses WHERE app_id = $1 AND id = $2 AND ($3::text IS NULL OR key_name = $3)
        UNION SELECT r.id FROM responses r JOIN chain c ON r.app_id = $1 AND r.previous_id = c.id)
      DELETE FROM responses WHERE app_id = $1 AND id IN (SELECT id FROM chain) RETURNING id, expires_at`,
  },
  responseUsage: {
    name: "response-usage",
    text: `SELECT count(*)::float8 AS rows, coalesce(sum(bytes), 0)::float8 AS bytes FROM responses WHERE app_id = $1 AND expires_at > $2`,
  },
};

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The batch's responses as one statement (of two with the same app and id, the later one), then
 *  the purge when one of them asks for it: a purge in its own transaction would cost a round trip. */
export function responsesWrites(writes: ResponseWrite[]): PgWrite[] {
  const latest = new Map<string, StoredResponse>();
  for (const { row } of writes) latest.set(JSON.stringify([row.appId, row.id]), row);
  const rows = [...latest.values()].sort((a, b) => compare(a.appId, b.appId) || compare(a.id, b.id));
  const columns: unknown[][] = Array.from({ length: 9 }, () => []);
  for (const r of rows) [r.id, r.appId, r.keyName, r.createdAt, r.expiresAt, r.previousId, r.input, r.output, responseBytes(r)].forEach((v, i) => columns[i]!.push(v));
  const purges = writes.filter((w) => w.purge).map((w) => w.row.createdAt);
  const purge = purges.length > 0 ? [{ q: SQL.purgeResponses, values: [Math.max(...purges)] }] : [];
  return [{ q: SQL.saveResponses, values: columns }, ...purge];
}

export function createPgRecordOps(db: PgPool, write: (response: ResponseWrite) => Promise<unknown>) {
  let uidWrites = 0;
  let responseWrites = 0;

  return {
    async rememberShareUid(shareId: string, tokenDigest: string, uid: string, at: number): Promise<void> {
      if (++uidWrites % PURGE_EVERY === 0) await db.write(SQL.rememberUidAndPurge, [shareId, tokenDigest, uid, at, at - SHARE_UID_KEEP_MS]);
      else await db.write(SQL.rememberUid, [shareId, tokenDigest, uid, at]);
    },
    async findShareUid(shareId: string, tokenDigest: string, since: number): Promise<string | undefined> {
      const [row] = await db.read<{ uid: string }>(SQL.findUid, [shareId, tokenDigest, since]);
      return row?.uid;
    },
    async saveResponse(row: StoredResponse): Promise<void> {
      await write({ kind: "response", row, purge: ++responseWrites % PURGE_EVERY === 0 });
    },
    async getResponse(appId: string, id: string, now: number, keyName?: string): Promise<StoredResponse | undefined> {
      const [row] = await db.read<StoredResponse>(SQL.getResponse, [appId, id, now, keyName ?? null]);
      return row;
    },
    async deleteResponse(appId: string, id: string, now = Date.now(), keyName?: string): Promise<boolean> {
      // an expired row not purged yet goes too (with what continues it), but was not there for the caller
      const rows = await db.write<{ id: string; expires_at: number }>(SQL.deleteResponse, [appId, id, keyName ?? null]);
      return rows.some((r) => r.id === id && Number(r.expires_at) > now);
    },
    async responseUsage(appId: string, now: number): Promise<{ rows: number; bytes: number }> {
      const [row] = await db.read<{ rows: number; bytes: number }>(SQL.responseUsage, [appId, now]);
      return row ?? { rows: 0, bytes: 0 };
    },
  };
}
