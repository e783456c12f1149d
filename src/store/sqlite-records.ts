// The SQLite half of the Store that holds share-link uids (by token digest) and Responses API
// responses. Both tables are bounded: every PURGE_EVERY-th write also deletes rows past their time
// (rows.ts).
import type Database from "better-sqlite3";
import { PURGE_EVERY, PURGE_ROWS, SHARE_UID_KEEP_MS, responseBytes } from "./rows.js";
import type { Batched } from "./write-batch.js";
import type { StoredResponse } from "./types.js";

const RESPONSE_COLUMNS = `id, app_id AS appId, key_name AS keyName, created_at AS createdAt, expires_at AS expiresAt,
  previous_id AS previousId, input, output`;

export function createRecordOps(db: Database.Database, batched: Batched) {
  const sql = {
    rememberUid: db.prepare<[string, string, string, number]>(
      `INSERT INTO share_uids (share_id, token_digest, uid, at) VALUES (?, ?, ?, ?)
       ON CONFLICT (share_id, token_digest) DO UPDATE SET uid = excluded.uid, at = excluded.at WHERE excluded.at >= share_uids.at`,
    ),
    purgeUids: db.prepare<[number]>(
      `DELETE FROM share_uids WHERE rowid IN (SELECT rowid FROM share_uids WHERE at < ? ORDER BY at LIMIT ${PURGE_ROWS})`,
    ),
    findUid: db.prepare<[string, string, number], { uid: string }>(`SELECT uid FROM share_uids WHERE share_id = ? AND token_digest = ? AND at >= ?`),
    saveResponse: db.prepare<[string, string, string | null, number, number, string | null, string, string, number]>(
      `INSERT INTO responses (id, app_id, key_name, created_at, expires_at, previous_id, input, output, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (app_id, id) DO UPDATE SET key_name = excluded.key_name, created_at = excluded.created_at,
         expires_at = excluded.expires_at, previous_id = excluded.previous_id, input = excluded.input, output = excluded.output,
         bytes = excluded.bytes`,
    ),
    purgeResponses: db.prepare<[number]>(
      `DELETE FROM responses WHERE rowid IN (SELECT rowid FROM responses WHERE expires_at <= ? ORDER BY expires_at LIMIT ${PURGE_ROWS})`,
    ),
    getResponse: db.prepare<{ app: string; id: string; now: number; key: string | null }, StoredResponse>(
      `SELECT ${RESPONSE_COLUMNS} FROM responses WHERE app_id = @app AND id = @id AND expires_at > @now AND (@key IS NULL OR key_name = @key)`,
    ),
    // the response, if the caller's, and every response continued from it
    deleteResponse: db.prepare<{ app: string; id: string; key: string | null }, { id: string; expires_at: number }>(
      `WITH RECURSIVE chain(id) AS (
         SELECT id FROM responses WHERE app_id = @app AND id = @id AND (@key IS NULL OR key_name = @key)
         UNION SELECT r.id FROM responses r JOIN chain c ON r.app_id = @app AND r.previous_id = c.id)
       DELETE FROM responses WHERE app_id = @app AND id IN (SELECT id FROM chain) RETURNING id, expires_at`,
    ),
    responseUsage: db.prepare<[string, number], { rows: number; bytes: number }>(
      `SELECT count(*) AS rows, coalesce(sum(bytes), 0) AS bytes FROM responses WHERE app_id = ? AND expires_at > ?`,
    ),
  };

  let uidWrites = 0;
  const rememberUid = db.transaction((shareId: string, tokenDigest: string, uid: string, at: number) => {
    sql.rememberUid.run(shareId, tokenDigest, uid, at);
    if (++uidWrites % PURGE_EVERY === 0) sql.purgeUids.run(at - SHARE_UID_KEEP_MS);
  });
  let responseWrites = 0;
  // on the request path (every stored response): group-committed with the rounds and usage rows
  const saveResponse = batched((r: StoredResponse) => {
    sql.saveResponse.run(r.id, r.appId, r.keyName, r.createdAt, r.expiresAt, r.previousId, r.input, r.output, responseBytes(r));
    if (++responseWrites % PURGE_EVERY === 0) sql.purgeResponses.run(r.createdAt);
  });

  return {
    async rememberShareUid(shareId: string, tokenDigest: string, uid: string, at: number): Promise<void> {
      rememberUid.immediate(shareId, tokenDigest, uid, at);
    },
    async findShareUid(shareId: string, tokenDigest: string, since: number): Promise<string | undefined> {
      return sql.findUid.get(shareId, tokenDigest, since)?.uid;
    },
    saveResponse,
    async getResponse(appId: string, id: string, now: number, keyName?: string): Promise<StoredResponse | undefined> {
      return sql.getResponse.get({ app: appId, id, now, key: keyName ?? null });
    },
    async deleteResponse(appId: string, id: string, now = Date.now(), keyName?: string): Promise<boolean> {
      // an expired row not purged yet goes too (with what continues it), but was not there for the caller
      return sql.deleteResponse.all({ app: appId, id, key: keyName ?? null }).some((r) => r.id === id && r.expires_at > now);
    },
    async responseUsage(appId: string, now: number): Promise<{ rows: number; bytes: number }> {
      return sql.responseUsage.get(appId, now)!;
    },
  };
}
