// The PostgreSQL half of the Store that holds created keys (digests only) and when each key was
// last used; the same behaviour as store/sqlite-keys.ts, each write one statement.
import type { PgPool } from "./postgres-pool.js";
import type { CreatedKeyRow, KeyUse } from "./types.js";

const KEY_COLUMNS = `name, kind, app_id AS "appId", sha256, max_usage_points AS "maxUsagePoints", qpm, tpm,
  period_points AS "periodPoints", period, expires_at AS "expiresAt", created_at AS "createdAt", revoked_at AS "revokedAt"`;

const SQL = {
  list: { text: `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY created_at, name COLLATE "C"` },
  get: { text: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE name = $1` },
  // sha256 is UNIQUE: a point lookup on its index
  find: { text: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE sha256 = $1` },
  // a name that a removed config key used starts with no history
  create: {
    text: `WITH added AS (
        INSERT INTO api_keys (name, kind, app_id, sha256, max_usage_points, qpm, tpm, period_points, period, expires_at, created_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
        ON CONFLICT (name) DO NOTHING RETURNING name
      ), forgotten AS (DELETE FROM key_activity WHERE name IN (SELECT name FROM added))
      SELECT name FROM added`,
  },
  revoke: { text: `UPDATE api_keys SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL` },
  recordUse: {
    text: `INSERT INTO key_activity (name, last_used_at) SELECT * FROM unnest($1::text[], $2::bigint[])
      ON CONFLICT (name) DO UPDATE SET last_used_at = GREATEST(key_activity.last_used_at, EXCLUDED.last_used_at)`,
  },
  listUse: { text: `SELECT name, last_used_at AS "lastUsedAt" FROM key_activity` },
};

export function createPgKeyOps(db: PgPool) {
  return {
    listCreatedKeys: () => db.read<CreatedKeyRow>(SQL.list, []),
    async findCreatedKey(sha256: string): Promise<CreatedKeyRow | undefined> {
      const [row] = await db.read<CreatedKeyRow>(SQL.find, [sha256]);
      return row;
    },
    async createKey(r: CreatedKeyRow): Promise<boolean> {
      const added = await db.write(SQL.create, [r.name, r.kind, r.appId, r.sha256, r.maxUsagePoints, r.qpm, r.tpm ?? 0, r.periodPoints ?? -1, r.period ?? "day", r.expiresAt ?? null, r.createdAt]);
      return added.length === 1;
    },
    async revokeKey(name: string, at: number): Promise<CreatedKeyRow | undefined> {
      // two statements: the second reads the row as the first (or a concurrent revoke) left it
      await db.write(SQL.revoke, [at, name]);
      const [row] = await db.read<CreatedKeyRow>(SQL.get, [name]);
      return row;
    },
    async recordKeyUse(uses: KeyUse[]): Promise<void> {
      if (uses.length === 0) return;
      // one row per name (a statement may not update a row twice): the latest use of each, in name
      // order (every instance locks the rows in one order)
      const latest = new Map<string, number>();
      for (const u of uses) latest.set(u.name, Math.max(u.lastUsedAt, latest.get(u.name) ?? -Infinity));
      const names = [...latest.keys()].sort();
      await db.write(SQL.recordUse, [names, names.map((n) => latest.get(n))]);
    },
    listKeyUse: () => db.read<KeyUse>(SQL.listUse, []),
  };
}
