// The SQLite half of the Store that keeps channel records for FastGPT's AI Proxy API
// (docs/fastgpt.md#channels). Writes are an operator's, rare: each is its own transaction, outside
// the request path's group commit.
import type Database from "better-sqlite3";
import type { ChannelRecord, ChannelWrite, NewChannelRecord } from "./types.js";

interface Row {
  id: number;
  ref: string;
  record: string | null;
  deleted: number;
  status: number;
  created_at: number;
}

export function createChannelOps(db: Database.Database) {
  const sql = {
    list: db.prepare<[], Row>(`SELECT * FROM channel_records ORDER BY id`),
    // an id is never given twice: the next is past every id used so far (deleted rows stay)
    add: db.prepare<[number | null, string, string | null, number, number], Row>(
      `INSERT INTO channel_records (id, ref, record, deleted, status, created_at)
       VALUES (coalesce(?, (SELECT coalesce(max(id), 0) + 1 FROM channel_records)), ?, ?, 0, ?, ?)
       ON CONFLICT DO NOTHING RETURNING *`,
    ),
    write: db.prepare<[string | null, number, string]>(`UPDATE channel_records SET record = ?, deleted = ? WHERE ref = ?`),
    status: db.prepare<[number, number], { id: number }>(`UPDATE channel_records SET status = ? WHERE id = ? RETURNING id`),
  };
  const add = db.transaction((rows: NewChannelRecord[]) =>
    // given ids first: a store-assigned id never takes one that config.json names
    [...rows].sort((a, b) => Number(b.id !== undefined) - Number(a.id !== undefined)).flatMap((r) => sql.add.all(r.id ?? null, r.ref, r.record, r.status, r.createdAt)),
  );
  const write = db.transaction((writes: ChannelWrite[]) => {
    for (const w of writes) sql.write.run(w.record, w.deleted ? 1 : 0, w.ref);
  });
  const status = db.transaction((ids: number[], value: number) => ids.flatMap((id) => sql.status.all(value, id).map((r) => r.id)));

  return {
    async listChannelRecords(): Promise<ChannelRecord[]> {
      return sql.list.all().map(fromRow);
    },
    async addChannelRecords(rows: NewChannelRecord[]): Promise<ChannelRecord[]> {
      return rows.length === 0 ? [] : add.immediate(rows).map(fromRow);
    },
    async writeChannelRecords(writes: ChannelWrite[]): Promise<void> {
      if (writes.length > 0) write.immediate(writes);
    },
    async setChannelStatus(ids: number[], value: number): Promise<number[]> {
      return ids.length === 0 ? [] : status.immediate(ids, value);
    },
  };
}

function fromRow(r: Row): ChannelRecord {
  return { id: r.id, ref: r.ref, record: r.record, deleted: r.deleted === 1, status: r.status, createdAt: r.created_at };
}
