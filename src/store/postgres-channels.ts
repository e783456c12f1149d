// The PostgreSQL half of the Store that keeps channel records for FastGPT's AI Proxy API; the same
// behaviour as store/sqlite-channels.ts. Instances starting at once may add records together: the
// table is locked for an add, so the next id is taken by one of them at a time.
import type { PgPool, PgWrite } from "./postgres-pool.js";
import type { ChannelRecord, ChannelWrite, NewChannelRecord } from "./types.js";

const COLUMNS = `id, ref, record, deleted, status, created_at AS "createdAt"`;

const SQL = {
  list: { text: `SELECT ${COLUMNS} FROM channel_records ORDER BY id` },
  lock: { text: `LOCK TABLE channel_records IN SHARE ROW EXCLUSIVE MODE` },
  // an id is never given twice: the next is past every id used so far (deleted rows stay)
  add: {
    text: `INSERT INTO channel_records (id, ref, record, deleted, status, created_at)
      VALUES (coalesce($1::bigint, (SELECT coalesce(max(id), 0) + 1 FROM channel_records)), $2, $3, false, $4, $5)
      ON CONFLICT DO NOTHING RETURNING ${COLUMNS}`,
  },
  write: { text: `UPDATE channel_records SET record = $1, deleted = $2 WHERE ref = $3` },
  status: { text: `UPDATE channel_records SET status = $1 WHERE id = ANY($2::bigint[]) RETURNING id` },
};

export function createPgChannelOps(db: PgPool) {
  return {
    listChannelRecords: () => db.read<ChannelRecord>(SQL.list, []),
    async addChannelRecords(rows: NewChannelRecord[]): Promise<ChannelRecord[]> {
      if (rows.length === 0) return [];
      // given ids first: a store-assigned id never takes one that config.json names
      const ordered = [...rows].sort((a, b) => Number(b.id !== undefined) - Number(a.id !== undefined));
      const writes: PgWrite[] = [{ q: SQL.lock, values: [] }, ...ordered.map((r) => ({ q: SQL.add, values: [r.id ?? null, r.ref, r.record, r.status, r.createdAt] }))];
      const results = await db.writeAll(writes);
      return results.slice(1).flat() as ChannelRecord[];
    },
    async writeChannelRecords(writes: ChannelWrite[]): Promise<void> {
      if (writes.length > 0) await db.writeAll(writes.map((w) => ({ q: SQL.write, values: [w.record, w.deleted, w.ref] })));
    },
    async setChannelStatus(ids: number[], status: number): Promise<number[]> {
      if (ids.length === 0) return [];
      const rows = await db.write<{ id: number }>(SQL.status, [status, ids]);
      return rows.map((r) => r.id);
    },
  };
}
