// The PostgreSQL half of the batch store (docs/batches.md#durability), shared by instances: file bytes
// in the database (every instance reads them), a claim one UPDATE over `FOR UPDATE SKIP LOCKED`
// (two instances never claim one line), a line's outcome and its usage row in one transaction whose
// first statement fails (division by zero, rolled back) when the line is no longer the writer's.
import type { PgPool, PgWrite } from "./postgres-pool.js";
import { usageWrite } from "./postgres-usage.js";
import { readFile, rm } from "node:fs/promises";
import { batchOf, fileOf, finishedOf, type BatchDbRow, type FileDbRow, type LineDbRow } from "./batch-rows.js";
import type { BatchStore, ClaimedLine, FileRow } from "./batch-types.js";

const FILE_COLUMNS = `id, app_id, key_name, purpose, filename, bytes, created_at`;
const CLAIMABLE = `(l.state = 'pending' OR (l.state = 'running' AND l.lease_until < $1))`;
/** the SQLSTATE of the guard that rolls a write back when its condition no longer holds */
const DIVISION_BY_ZERO = "22012";

const SQL = {
  addFile: { text: `INSERT INTO batch_files (${FILE_COLUMNS}, content) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)` },
  getFile: { name: "batch-get-file", text: `SELECT ${FILE_COLUMNS} FROM batch_files WHERE app_id = $1 AND id = $2` },
  content: { text: `SELECT content FROM batch_files WHERE app_id = $1 AND id = $2` },
  deleteFile: { text: `DELETE FROM batch_files WHERE app_id = $1 AND id = $2 RETURNING id` },
  addBatch: { text: `INSERT INTO batches (id, app_id, key_name, status, created_at, expires_at, object) VALUES ($1, $2, $3, $4, $5, $6, $7)` },
  addLines: {
    text: `INSERT INTO batch_lines (batch_id, line, custom_id, model, digest, body, state)
      SELECT $1::text, u.*, 'pending' FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u`,
  },
  getBatch: { name: "batch-get", text: `SELECT app_id, key_name, object FROM batches WHERE app_id = $1 AND id = $2` },
  findBatch: { name: "batch-find", text: `SELECT app_id, key_name, object FROM batches WHERE id = $1` },
  update: {
    name: "batch-update",
    text: `WITH b AS (UPDATE batches SET object = $1, status = $2 WHERE id = $3 AND status = ANY($4::text[]) RETURNING id),
        l AS (UPDATE batch_lines SET state = $5 WHERE $5::text IS NOT NULL AND batch_id IN (SELECT id FROM b) AND state = ANY($6::text[]))
      SELECT count(*)::int AS n FROM b`,
  },
  guardedUpdate: {
    text: `WITH b AS (UPDATE batches SET object = $1, status = $2 WHERE id = $3 AND status = ANY($4::text[]) RETURNING id)
      SELECT 1 / (SELECT count(*)::int FROM b) AS ok`,
  },
  models: {
    name: "batch-models",
    text: `SELECT DISTINCT l.model FROM batch_lines l JOIN batches b ON b.id = l.batch_id WHERE b.status = 'in_progress' AND ${CLAIMABLE}`,
  },
  claim: {
    name: "batch-claim",
    text: `UPDATE batch_lines t SET state = 'running', owner = $4, lease_until = $5
      FROM (SELECT l.batch_id, l.line FROM batch_lines l JOIN batches b ON b.id = l.batch_id
        WHERE l.model = $2 AND b.status = 'in_progress' AND ${CLAIMABLE}
        ORDER BY l.digest, b.created_at, l.line LIMIT $3 FOR UPDATE OF l SKIP LOCKED) c
      WHERE t.batch_id = c.batch_id AND t.line = c.line
      RETURNING t.batch_id, t.line, t.custom_id, t.model, t.body`,
  },
  renew: {
    name: "batch-renew",
    text: `UPDATE batch_lines t SET lease_until = $1 FROM unnest($3::text[], $4::integer[]) AS r(batch_id, line)
      WHERE t.batch_id = r.batch_id AND t.line = r.line AND t.owner = $2 AND t.state = 'running'`,
  },
  finish: {
    name: "batch-finish-line",
    text: `WITH u AS (UPDATE batch_lines SET state = $1, output = $2, input_tokens = $3, output_tokens = $4, body = ''
        WHERE batch_id = $5 AND line = $6 AND owner = $7 AND state = 'running' RETURNING 1)
      SELECT 1 / (SELECT count(*)::int FROM u) AS ok`,
  },
  dropLapsed: { text: `UPDATE batch_lines SET state = $1 WHERE batch_id = $2 AND state = 'running' AND lease_until < $3` },
  states: { name: "batch-states", text: `SELECT state, count(*)::int AS n FROM batch_lines WHERE batch_id = $1 GROUP BY state` },
  lines: { text: `SELECT line, custom_id, state, output, input_tokens, output_tokens FROM batch_lines WHERE batch_id = $1 ORDER BY line` },
  purgeFiles: { text: `DELETE FROM batch_files WHERE created_at < $1 RETURNING id` },
  purgeLines: { text: `DELETE FROM batch_lines WHERE batch_id IN (SELECT id FROM batches WHERE created_at < $1)` },
  purgeBatches: { text: `DELETE FROM batches WHERE created_at < $1 RETURNING id` },
  count: { text: `SELECT status, count(*)::int AS n FROM batches GROUP BY status` },
};

const guardFailed = (err: unknown): boolean => (err as { code?: string } | undefined)?.code === DIVISION_BY_ZERO;

export function createPgBatchStore(db: PgPool): BatchStore {
  const fileWrite = (r: FileRow, bytes: Buffer | null): PgWrite => ({ q: SQL.addFile, values: [r.id, r.appId, r.keyName, r.purpose, r.filename, r.bytes, r.createdAt, bytes] });
  /** a guarded transaction: false when its guard rolled it back */
  const guarded = (writes: PgWrite[]) => db.writeAll(writes).then(() => true, (err: unknown) => (guardFailed(err) ? false : Promise.reject(err)));

  return {
    async addFile(row, source) {
      const bytes = "bytes" in source ? source.bytes : await readFile(source.path);
      await db.write(SQL.addFile, fileWrite(row, bytes).values);
      if ("path" in source) await rm(source.path, { force: true });
    },
    getFile: async (appId, id) => (await db.read<FileDbRow>(SQL.getFile, [appId, id])).map(fileOf)[0],
    async listFiles(appId, q) {
      const after = q.after ? (await db.read<FileDbRow>(SQL.getFile, [appId, q.after]))[0] : undefined;
      const cmp = q.order === "asc" ? ">" : "<";
      const values: unknown[] = [appId, q.limit];
      const purpose = q.purpose ? `AND purpose = $${values.push(q.purpose)}` : "";
      const from = after ? `AND (created_at, id) ${cmp} ($${values.push(after.created_at)}, $${values.push(after.id)})` : "";
      const text = `SELECT ${FILE_COLUMNS} FROM batch_files WHERE app_id = $1 ${purpose} ${from} ORDER BY created_at ${q.order}, id COLLATE "C" ${q.order} LIMIT $2`;
      return (await db.read<FileDbRow>({ text }, values)).map(fileOf);
    },
    fileContent: async (appId, id) => {
      const r = (await db.read<{ content: Buffer | null }>(SQL.content, [appId, id]))[0];
      return r ? (r.content ?? Buffer.alloc(0)) : undefined;
    },
    deleteFile: async (appId, id) => (await db.write(SQL.deleteFile, [appId, id])).length === 1,
    async createBatch(s, lines) {
      const b = s.batch;
      await db.writeAll([
        { q: SQL.addBatch, values: [b.id, s.appId, s.keyName, b.status, b.created_at * 1000, b.expires_at * 1000, JSON.stringify(b)] },
        ...(lines.length === 0
          ? []
          : [{ q: SQL.addLines, values: [b.id, lines.map((l) => l.line), lines.map((l) => l.customId), lines.map((l) => l.model), lines.map((l) => l.digest), lines.map((l) => l.body)] }]),
      ]);
    },
    getBatch: async (appId, id) => (await db.read<BatchDbRow>(SQL.getBatch, [appId, id])).map(batchOf)[0],
    findBatch: async (id) => (await db.read<BatchDbRow>(SQL.findBatch, [id])).map(batchOf)[0],
    async listBatches(appId, q) {
      const after = q.after ? (await db.read<BatchDbRow>(SQL.getBatch, [appId, q.after])).map(batchOf)[0] : undefined;
      const values: unknown[] = [appId, q.limit];
      const from = after ? `AND (created_at, id) < ($${values.push(after.batch.created_at * 1000)}, $${values.push(after.batch.id)})` : "";
      const text = `SELECT app_id, key_name, object FROM batches WHERE app_id = $1 ${from} ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $2`;
      return (await db.read<BatchDbRow>({ text }, values)).map(batchOf);
    },
    async updateBatch(batch, from, lines) {
      const rows = await db.write<{ n: number }>(SQL.update, [JSON.stringify(batch), batch.status, batch.id, from, lines?.to ?? null, lines?.from ?? []]);
      return rows[0]?.n === 1;
    },
    finishBatch: (batch, from, files) =>
      guarded([{ q: SQL.guardedUpdate, values: [JSON.stringify(batch), batch.status, batch.id, from] }, ...files.map((f) => fileWrite(f.row, f.bytes))]),
    batchesIn: async (statuses) =>
      (await db.read<BatchDbRow>({ text: `SELECT app_id, key_name, object FROM batches WHERE status = ANY($1::text[])` }, [statuses])).map(batchOf),
    claimableModels: async (now) => (await db.read<{ model: string }>(SQL.models, [now])).map((r) => r.model),
    claim: async (model, limit, owner, now, until): Promise<ClaimedLine[]> =>
      (await db.write<{ batch_id: string; line: number; custom_id: string; model: string; body: string }>(SQL.claim, [now, model, limit, owner, until])).map((r) => ({
        batchId: r.batch_id,
        line: Number(r.line),
        customId: r.custom_id,
        model: r.model,
        body: r.body,
      })),
    async renew(owner, lines, until) {
      if (lines.length === 0) return;
      await db.write(SQL.renew, [until, owner, lines.map((l) => l.batchId), lines.map((l) => l.line)]);
    },
    finishLine: (batchId, line, owner, o) =>
      guarded([
        { q: SQL.finish, values: [o.state, o.output, o.inputTokens, o.outputTokens, batchId, line, owner] },
        ...(o.usage ? [usageWrite([{ kind: "usage", row: o.usage.row, scopes: o.usage.scopes }])] : []),
      ]),
    dropLapsed: async (batchId, now, to) => void (await db.write(SQL.dropLapsed, [to, batchId, now])),
    lineStates: async (batchId) => Object.fromEntries((await db.read<{ state: string; n: number }>(SQL.states, [batchId])).map((r) => [r.state, r.n])),
    linesOf: async (batchId) => (await db.read<LineDbRow>(SQL.lines, [batchId])).map(finishedOf),
    async purge(before) {
      const [files, , batches] = await db.writeAll([
        { q: SQL.purgeFiles, values: [before] },
        { q: SQL.purgeLines, values: [before] },
        { q: SQL.purgeBatches, values: [before] },
      ]);
      return { files: files!.length, batches: batches!.length };
    },
    countBatches: async () => Object.fromEntries((await db.read<{ status: string; n: number }>(SQL.count, [])).map((r) => [r.status, r.n])),
  };
}
