// The SQLite half of the Store that holds created keys (digests only) and when each key was last used.
// Key writes are rare (an operator's call, a lastUsedAt flush every few seconds): each is its own
// transaction, outside the request path's group commit.
import type Database from "better-sqlite3";
import type { CreatedKeyRow, KeyUse } from "./types.js";

interface KeyRow {
  name: string;
  kind: "app" | "global";
  app_id: string | null;
  sha256: string;
  max_usage_points: number;
  qpm: number;
  tpm: number;
  period_points: number;
  period: "day" | "week" | "month";
  expires_at: number | null;
  created_at: number;
  revoked_at: number | null;
}

export function createKeyOps(db: Database.Database) {
  const sql = {
    list: db.prepare<[], KeyRow>(`SELECT * FROM api_keys ORDER BY created_at, name`),
    get: db.prepare<[string], KeyRow>(`SELECT * FROM api_keys WHERE name = ?`),
    // sha256 is UNIQUE: a point lookup on its index
    find: db.prepare<[string], KeyRow>(`SELECT * FROM api_keys WHERE sha256 = ?`),
    insert: db.prepare<[string, string, string | null, string, number, number, number, number, string, number | null, number]>(
      `INSERT INTO api_keys (name, kind, app_id, sha256, max_usage_points, qpm, tpm, period_points, period, expires_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO NOTHING`,
    ),
    revoke: db.prepare<[number, string]>(`UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL`),
    // a name that a removed config key used starts with no history
    forgetUse: db.prepare<[string]>(`DELETE FROM key_activity WHERE name = ?`),
    recordUse: db.prepare<[string, number]>(
      `INSERT INTO key_activity (name, last_used_at) VALUES (?, ?)
       ON CONFLICT (name) DO UPDATE SET last_used_at = max(last_used_at, excluded.last_used_at)`,
    ),
    listUse: db.prepare<[], { name: string; last_used_at: number }>(`SELECT name, last_used_at FROM key_activity`),
  };
  const create = db.transaction((r: CreatedKeyRow): boolean => {
    const added = sql.insert.run(r.name, r.kind, r.appId, r.sha256, r.maxUsagePoints, r.qpm, r.tpm ?? 0, r.periodPoints ?? -1, r.period ?? "day", r.expiresAt ?? null, r.createdAt).changes === 1;
    if (added) sql.forgetUse.run(r.name);
    return added;
  });
  const recordUse = db.transaction((uses: KeyUse[]) => {
    for (const u of uses) sql.recordUse.run(u.name, u.lastUsedAt);
  });

  return {
    async listCreatedKeys(): Promise<CreatedKeyRow[]> {
      return sql.list.all().map(fromRow);
    },
    async findCreatedKey(sha256: string): Promise<CreatedKeyRow | undefined> {
      const row = sql.find.get(sha256);
      return row && fromRow(row);
    },
    async createKey(row: CreatedKeyRow): Promise<boolean> {
      return create.immediate(row);
    },
    async revokeKey(name: string, at: number): Promise<CreatedKeyRow | undefined> {
      sql.revoke.run(at, name);
      const row = sql.get.get(name);
      return row && fromRow(row);
    },
    async recordKeyUse(uses: KeyUse[]): Promise<void> {
      if (uses.length > 0) recordUse.immediate(uses);
    },
    async listKeyUse(): Promise<KeyUse[]> {
      return sql.listUse.all().map((u) => ({ name: u.name, lastUsedAt: u.last_used_at }));
    },
  };
}

function fromRow(r: KeyRow): CreatedKeyRow {
  return {
    name: r.name,
    kind: r.kind,
    appId: r.app_id,
    sha256: r.sha256,
    maxUsagePoints: r.max_usage_points,
    qpm: r.qpm,
    tpm: r.tpm,
    periodPoints: r.period_points,
    period: r.period,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}
