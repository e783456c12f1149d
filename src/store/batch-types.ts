// What the store keeps of OpenAI's Files and Batch API (docs/batches.md#durability): files, batches and
// each line's state, claim and output. SQLite (sqlite-store.ts) and PostgreSQL (postgres-store.ts)
// implement it alike; a line's output and its usage row are written in one commit.
import type { UsageRow } from "./usage-row.js";

export type FilePurpose = "batch" | "batch_output";

/** A file's metadata (its bytes are kept apart: on disk or in the database). */
export interface FileRow {
  id: string;
  appId: string;
  /** the key that uploaded it; null for a batch's output and error files */
  keyName: string | null;
  purpose: FilePurpose;
  filename: string;
  bytes: number;
  /** epoch ms */
  createdAt: number;
}

export interface FileListQuery {
  purpose?: string;
  limit: number;
  /** a file id: those after it in the order */
  after?: string;
  order: "asc" | "desc";
}

export type BatchStatus = "validating" | "failed" | "in_progress" | "finalizing" | "completed" | "expired" | "cancelling" | "cancelled";

/** OpenAI's batch object, as it is answered (docs/batches.md). */
export interface BatchObject {
  id: string;
  object: "batch";
  endpoint: string;
  errors: { object: "list"; data: Array<{ code: string; message: string; line: number | null; param: string | null }> } | null;
  input_file_id: string;
  completion_window: "24h";
  status: BatchStatus;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  metadata: Record<string, string> | null;
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
}

/** A batch as kept: its object, and who it belongs to. */
export interface StoredBatch {
  appId: string;
  /** the creating key's configured name (never the key): its lines run as that key */
  keyName: string;
  batch: BatchObject;
}

export interface NewLine {
  line: number;
  customId: string;
  model: string;
  /** sha256 of model + system prompt: lines sharing a prompt are claimed together */
  digest: string;
  /** the request body, JSON text */
  body: string;
}

export type LineState = "pending" | "running" | "done" | "failed" | "cancelled" | "expired";

/** A line an instance claimed. */
export interface ClaimedLine {
  batchId: string;
  line: number;
  customId: string;
  model: string;
  body: string;
}

/** What a line that ran ended with. */
export interface LineOutcome {
  state: "done" | "failed" | "cancelled" | "expired";
  /** the output (or error) line, JSON text; null for a line never run */
  output: string | null;
  inputTokens: number;
  outputTokens: number;
  /** the line's usage row and spend scopes, written in the same commit (absent: the pipeline wrote it) */
  usage?: { row: UsageRow; scopes: string[] };
}

/** A line as finalizing reads it. */
export interface FinishedLine {
  line: number;
  customId: string;
  state: LineState;
  output: string | null;
  inputTokens: number;
  outputTokens: number;
}

export interface BatchStore {
  /** Keeps a file's metadata and bytes (`source`: a spooled file, moved or read, or the bytes). */
  addFile(row: FileRow, source: { path: string } | { bytes: Buffer }): Promise<void>;
  getFile(appId: string, id: string): Promise<FileRow | undefined>;
  listFiles(appId: string, query: FileListQuery): Promise<FileRow[]>;
  fileContent(appId: string, id: string): Promise<Buffer | undefined>;
  /** false when the app has no such file */
  deleteFile(appId: string, id: string): Promise<boolean>;
  /** The batch and its lines, in one commit. */
  createBatch(batch: StoredBatch, lines: NewLine[]): Promise<void>;
  getBatch(appId: string, id: string): Promise<StoredBatch | undefined>;
  /** The batch by id alone (the runner's). */
  findBatch(id: string): Promise<StoredBatch | undefined>;
  /** Newest first, those created before `after`'s. */
  listBatches(appId: string, query: { limit: number; after?: string }): Promise<StoredBatch[]>;
  /** Replaces the batch's object when its status is one of `from`; false otherwise. With `lines`,
   *  the batch's lines in state `lines.from` are set to `lines.to` in the same commit. */
  updateBatch(batch: BatchObject, from: BatchStatus[], lines?: { from: LineState[]; to: LineState }): Promise<boolean>;
  /** Replaces the batch's object and adds its output files in one commit, when its status is one of
   *  `from`; false (nothing written) otherwise. */
  finishBatch(batch: BatchObject, from: BatchStatus[], files: Array<{ row: FileRow; bytes: Buffer }>): Promise<boolean>;
  /** Batches in these states (the runner's rounds). */
  batchesIn(statuses: BatchStatus[]): Promise<StoredBatch[]>;
  /** Models with lines claimable at `now` (pending, or running with a lapsed lease), of batches in progress. */
  claimableModels(now: number): Promise<string[]>;
  /** Claims up to `limit` such lines of `model`, ordered by digest, for `owner` until `leaseUntil`. */
  claim(model: string, limit: number, owner: string, now: number, leaseUntil: number): Promise<ClaimedLine[]>;
  /** Moves the leases of the owner's running lines forward. */
  renew(owner: string, lines: Array<{ batchId: string; line: number }>, leaseUntil: number): Promise<void>;
  /** The line's outcome (and usage row) in one commit, if the line is still `owner`'s and running;
   *  false (nothing written) when another instance took it over. */
  finishLine(batchId: string, line: number, owner: string, outcome: LineOutcome): Promise<boolean>;
  /** Sets the batch's running lines whose lease lapsed at `now` (their instance died) to `to`: a
   *  cancelled or expired batch does not wait for them. */
  dropLapsed(batchId: string, now: number, to: LineState): Promise<void>;
  /** How many of the batch's lines are in each state. */
  lineStates(batchId: string): Promise<Partial<Record<LineState, number>>>;
  /** Every line of the batch, in line order. */
  linesOf(batchId: string): Promise<FinishedLine[]>;
  /** Deletes files and batches (with their lines) created before `before`; how many of each. */
  purge(before: number): Promise<{ files: number; batches: number }>;
  /** How many batches are in each status. */
  countBatches(): Promise<Partial<Record<BatchStatus, number>>>;
}
