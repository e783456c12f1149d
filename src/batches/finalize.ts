// A batch whose lines are all over becomes its files (docs/batches.md#batches): the output file (lines
// answered), the error file (lines that failed, and those never run: cancelled or expired), its
// request counts and usage; `completed`, `cancelled` or `expired`, written in one commit with the files.
import { neverRan } from "./line-run.js";
import { newId } from "./objects.js";
import type { BatchObject, BatchStore, FileRow, StoredBatch } from "../store/batch-types.js";

export async function finalizeBatch(store: BatchStore, s: StoredBatch, nowMs: number): Promise<boolean> {
  const b = s.batch;
  const lines = await store.linesOf(b.id);
  const final = b.expired_at !== null ? "expired" : b.cancelling_at !== null ? "cancelled" : "completed";
  const out: string[] = [];
  const err: string[] = [];
  let completed = 0;
  let failed = 0;
  let input = 0;
  let output = 0;
  for (const l of lines) {
    input += l.inputTokens;
    output += l.outputTokens;
    if (l.state === "done") completed++;
    if (l.state === "failed") failed++;
    if (l.state === "done") out.push(l.output!);
    else err.push(l.output ?? neverRan(l.customId, final === "expired" ? "expired" : "cancelled"));
  }
  const at = Math.floor(nowMs / 1000);
  const file = (kind: string, text: string[]) => {
    const bytes = Buffer.from(text.map((t) => `${t}\n`).join(""));
    const row: FileRow = { id: newId("file-"), appId: s.appId, keyName: null, purpose: "batch_output", filename: `${b.id}_${kind}.jsonl`, bytes: bytes.length, createdAt: nowMs };
    return { row, bytes };
  };
  const files = [...(out.length > 0 ? [file("output", out)] : []), ...(err.length > 0 ? [file("error", err)] : [])];
  const next: BatchObject = {
    ...b,
    status: final,
    finalizing_at: b.finalizing_at ?? at,
    completed_at: final === "completed" ? at : b.completed_at,
    cancelled_at: final === "cancelled" ? at : b.cancelled_at,
    output_file_id: out.length > 0 ? files[0]!.row.id : null,
    error_file_id: err.length > 0 ? files.at(-1)!.row.id : null,
    request_counts: { total: lines.length, completed, failed },
    usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
  };
  return store.finishBatch(next, ["in_progress", "finalizing", "cancelling"], files);
}
