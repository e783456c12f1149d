// Rows of the batch tables as both stores read them, and what both answer from them
// (docs/batches.md#durability).
import type { BatchObject, FileRow, FinishedLine, LineState, StoredBatch } from "./batch-types.js";

export interface FileDbRow {
  id: string;
  app_id: string;
  key_name: string | null;
  purpose: string;
  filename: string;
  bytes: number;
  created_at: number;
}

export const fileOf = (r: FileDbRow): FileRow => ({
  id: r.id,
  appId: r.app_id,
  keyName: r.key_name,
  purpose: r.purpose as FileRow["purpose"],
  filename: r.filename,
  bytes: Number(r.bytes),
  createdAt: Number(r.created_at),
});

export interface BatchDbRow {
  app_id: string;
  key_name: string;
  object: string;
}

export const batchOf = (r: BatchDbRow): StoredBatch => ({ appId: r.app_id, keyName: r.key_name, batch: JSON.parse(r.object) as BatchObject });

export interface LineDbRow {
  line: number;
  custom_id: string;
  state: string;
  output: string | null;
  input_tokens: number;
  output_tokens: number;
}

export const finishedOf = (r: LineDbRow): FinishedLine => ({
  line: Number(r.line),
  customId: r.custom_id,
  state: r.state as LineState,
  output: r.output,
  inputTokens: Number(r.input_tokens),
  outputTokens: Number(r.output_tokens),
});

/** A batch's created_at is in seconds (OpenAI's); rows are ordered by it in ms. */
export const createdMs = (b: BatchObject): number => b.created_at * 1000;
