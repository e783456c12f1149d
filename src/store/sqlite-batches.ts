// The SQLite half of the batch store (docs/batches.md#durability): metadata, batches and lines in the
// database, file bytes under `batches.dir` (or in the database for the memory store). A claim is one
// UPDATE … RETURNING (a transaction of its own); a line's outcome and its usage row share the write
// batch's commit, and the usage row is written only if the line was still the writer's.
import type Database from "better-sqlite3";
import type { Batched } from "./write-batch.js";
import type { UsageGatherer } from "./sqlite-usage.js";
import { createDiskBytes, type FileBytes } from "./batch-file-bytes.js";
import { batchOf, fileOf, finishedOf, type BatchDbRow, type FileDbRow, type LineDbRow } from "./batch-rows.js";
import type { BatchStore, ClaimedLine, FileRow, LineOutcome, LineState } from "./batch-types.js";
import { readFileSync, rmSync } from "node:fs";

const CLAIMABLE = `(l.state = 'pending' OR (l.state = 'running' AND l.lease_until < @now))`;

function prepare(db: Database.Database) {
  return {
    addFile: db.prepare(`INSERT INTO batch_files (id, app_id, key_name, purpose, filename, bytes, created_at, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
    getFile: db.prepare<[string, string], FileDbRow>(`SELECT id, app_id, key_name, purpose, filename, bytes, created_at FROM batch_files WHERE app_id = ? AND id = ?`),
    content: db.prepare<[string, string], { content: Buffer | null }>(`SELECT content FROM batch_files WHERE app_id = ? AND id = ?`),
    deleteFile: db.prepare(`DELETE FROM batch_files WHERE app_id = ? AND id = ?`),
    addBatch: db.prepare(`INSERT INTO batches (id, app_id, key_name, status, created_at, expires_at, object) VALUES (?, ?, ?, ?, ?, ?, ?)`),
    addLine: db.prepare(`INSERT INTO batch_lines (batch_id, line, custom_id, model, digest, body, state) VALUES (?, ?, ?, ?, ?, ?, 'pending')`),
    getBatch: db.prepare<[string, string], BatchDbRow>(`SELECT app_id, key_name, object FROM batches WHERE app_id = ? AND id = ?`),
    findBatch: db.prepare<[string], BatchDbRow>(`SELECT app_id, key_name, object FROM batches WHERE id = ?`),
    models: db.prepare<{ now: number }, { model: string }>(
      `SELECT DISTINCT l.model FROM batch_lines l JOIN batches b ON b.id = l.batch_id WHERE b.status = 'in_progress' AND ${CLAIMABLE}`,
    ),
    claim: db.prepare<{ model: string; limit: number; owner: string; now: number; until: number }, { batch_id: string; line: number; custom_id: string; model: string; body: string }>(
      `UPDATE batch_lines SET state = 'running', owner = @owner, lease_until = @until
       WHERE rowid IN (SELECT l.rowid FROM batch_lines l JOIN batches b ON b.id = l.batch_id
         WHERE l.model = @model AND b.status = 'in_progress' AND ${CLAIMABLE} ORDER BY l.digest, b.created_at, l.line LIMIT @limit)
       RETURNING batch_id, line, custom_id, model, body`,
    ),
    renew: db.prepare(`UPDATE batch_lines SET lease_until = ? WHERE batch_id = ? AND line = ? AND owner = ? AND state = 'running'`),
    finish: db.prepare(
      `UPDATE batch_lines SET state = ?, output = ?, input_tokens = ?, output_tokens = ?, body = '' WHERE batch_id = ? AND line = ? AND owner = ? AND state = 'running'`,
    ),
    dropLapsed: db.prepare(`UPDATE batch_lines SET state = ? WHERE batch_id = ? AND state = 'running' AND lease_until < ?`),
    states: db.prepare<[string], { state: string; n: number }>(`SELECT state, COUNT(*) AS n FROM batch_lines WHERE batch_id = ? GROUP BY state`),
    lines: db.prepare<[string], LineDbRow>(`SELECT line, custom_id, state, output, input_tokens, output_tokens FROM batch_lines WHERE batch_id = ? ORDER BY line`),
    oldFiles: db.prepare<[number], { id: string }>(`SELECT id FROM batch_files WHERE created_at < ?`),
    purgeFiles: db.prepare(`DELETE FROM batch_files WHERE created_at < ?`),
    purgeLines: db.prepare(`DELETE FROM batch_lines WHERE batch_id IN (SELECT id FROM batches WHERE created_at < ?)`),
    purgeBatches: db.prepare(`DELETE FROM batches WHERE created_at < ?`),
    count: db.prepare<[], { status: string; n: number }>(`SELECT status, COUNT(*) AS n FROM batches GROUP BY status`),
  };
}

/** `dir`: where file bytes go; absent (the memory store): in the database. */
export function createSqliteBatchStore(db: Database.Database, batched: Batched, usage: UsageGatherer, dir?: string): BatchStore {
  const sql = prepare(db);
  const disk: FileBytes | undefined = dir ? createDiskBytes(dir) : undefined;
  const inDb = (source: { path: string } | { bytes: Buffer }) => ("bytes" in source ? source.bytes : readFileSync(source.path));
  const fileValues = (r: FileRow) => [r.id, r.appId, r.keyName, r.purpose, r.filename, r.bytes, r.createdAt] as const;
  const setLines = (batchId: string, from: LineState[], to: LineState) =>
    db.prepare(`UPDATE batch_lines SET state = ? WHERE batch_id = ? AND state IN (${from.map(() => "?").join(", ")})`).run(to, batchId, ...from);
  const update = db.transaction((object: string, id: string, status: string, from: string[], lines?: { from: LineState[]; to: LineState }) => {
    const changed = db.prepare(`UPDATE batches SET object = ?, status = ? WHERE id = ? AND status IN (${from.map(() => "?").join(", ")})`).run(object, status, id, ...from).changes;
    if (changed === 1 && lines) setLines(id, lines.from, lines.to);
    return changed === 1;
  });
  const finishLine = batched((batchId: string, line: number, owner: string, o: LineOutcome) => {
    const mine = sql.finish.run(o.state, o.output, o.inputTokens, o.outputTokens, batchId, line, owner).changes === 1;
    if (mine && o.usage) usage.add(o.usage.row, o.usage.scopes);
    return mine;
  });

  return {
    async addFile(row, source) {
      if (disk) disk.put(row.id, source);
      try {
        sql.addFile.run(...fileValues(row), disk ? null : inDb(source));
      } catch (err) {
        disk?.remove(row.id);
        throw err;
      }
      if (!disk && "path" in source) rmSync(source.path, { force: true });
    },
    getFile: async (appId, id) => {
      const r = sql.getFile.get(appId, id);
      return r && fileOf(r);
    },
    async listFiles(appId, q) {
      const dir = q.order === "asc" ? ">" : "<";
      const after = q.after ? sql.getFile.get(appId, q.after) : undefined;
      const rows = db
        .prepare<unknown[], FileDbRow>(
          `SELECT id, app_id, key_name, purpose, filename, bytes, created_at FROM batch_files WHERE app_id = ?
           ${q.purpose ? "AND purpose = ?" : ""} ${after ? `AND (created_at, id) ${dir} (?, ?)` : ""}
           ORDER BY created_at ${q.order}, id ${q.order} LIMIT ?`,
        )
        .all(appId, ...(q.purpose ? [q.purpose] : []), ...(after ? [after.created_at, after.id] : []), q.limit);
      return rows.map(fileOf);
    },
    async fileContent(appId, id) {
      const r = sql.content.get(appId, id);
      if (!r) return undefined;
      return disk ? disk.read(id) : (r.content ?? Buffer.alloc(0));
    },
    async deleteFile(appId, id) {
      const gone = sql.deleteFile.run(appId, id).changes === 1;
      if (gone) disk?.remove(id);
      return gone;
    },
    createBatch: async (s, lines) =>
      db.transaction(() => {
        sql.addBatch.run(s.batch.id, s.appId, s.keyName, s.batch.status, s.batch.created_at * 1000, s.batch.expires_at * 1000, JSON.stringify(s.batch));
        for (const l of lines) sql.addLine.run(s.batch.id, l.line, l.customId, l.model, l.digest, l.body);
      }).immediate(),
    getBatch: async (appId, id) => {
      const r = sql.getBatch.get(appId, id);
      return r && batchOf(r);
    },
    findBatch: async (id) => {
      const r = sql.findBatch.get(id);
      return r && batchOf(r);
    },
    async listBatches(appId, q) {
      const after = q.after ? sql.getBatch.get(appId, q.after) : undefined;
      const at = after ? batchOf(after).batch.created_at * 1000 : 0;
      const rows = db
        .prepare<unknown[], BatchDbRow>(
          `SELECT app_id, key_name, object FROM batches WHERE app_id = ? ${after ? "AND (created_at, id) < (?, ?)" : ""} ORDER BY created_at DESC, id DESC LIMIT ?`,
        )
        .all(appId, ...(after ? [at, q.after] : []), q.limit);
      return rows.map(batchOf);
    },
    updateBatch: async (batch, from, lines) => update.immediate(JSON.stringify(batch), batch.id, batch.status, from, lines),
    async finishBatch(batch, from, files) {
      for (const f of files) disk?.put(f.row.id, { bytes: f.bytes });
      const done = db
        .transaction(() => {
          if (!update(JSON.stringify(batch), batch.id, batch.status, from)) return false;
          for (const f of files) sql.addFile.run(...fileValues(f.row), disk ? null : f.bytes);
          return true;
        })
        .immediate();
      if (!done) for (const f of files) disk?.remove(f.row.id);
      return done;
    },
    batchesIn: async (statuses) =>
      db
        .prepare<string[], BatchDbRow>(`SELECT app_id, key_name, object FROM batches WHERE status IN (${statuses.map(() => "?").join(", ")})`)
        .all(...statuses)
        .map(batchOf),
    claimableModels: async (now) => sql.models.all({ now }).map((r) => r.model),
    claim: async (model, limit, owner, now, until): Promise<ClaimedLine[]> =>
      sql.claim.all({ model, limit, owner, now, until }).map((r) => ({ batchId: r.batch_id, line: r.line, customId: r.custom_id, model: r.model, body: r.body })),
    renew: async (owner, lines, until) => db.transaction(() => lines.forEach((l) => sql.renew.run(until, l.batchId, l.line, owner)))(),
    finishLine,
    dropLapsed: async (batchId, now, to) => void sql.dropLapsed.run(to, batchId, now),
    lineStates: async (batchId) => Object.fromEntries(sql.states.all(batchId).map((r) => [r.state, r.n])),
    linesOf: async (batchId) => sql.lines.all(batchId).map(finishedOf),
    async purge(before) {
      const old = disk ? sql.oldFiles.all(before) : [];
      const counts = db.transaction(() => {
        const files = sql.purgeFiles.run(before).changes;
        sql.purgeLines.run(before);
        return { files, batches: sql.purgeBatches.run(before).changes };
      })();
      for (const f of old) disk?.remove(f.id);
      return counts;
    },
    countBatches: async () => Object.fromEntries(sql.count.all().map((r) => [r.status, r.n])),
  };
}
