// One batch line run through the one pipeline (docs/batches.md#how-lines-run): as the key that made
// the batch (a stand-in token of its name), at `batches.priority`, on the channel found with
// headroom, paced (no QPM/TPM/maxConcurrent), its usage row handed back and written with its output
// in one commit. What the line ended with, as OpenAI's output (or error) line.
import { randomUUID } from "node:crypto";
import type { CallAnswer, CallInput } from "../metered/memory-call.js";
import type { UsageRow } from "../store/types.js";
import { newId } from "./objects.js";
import type { ClaimedLine, LineOutcome } from "../store/batch-types.js";

/** Why a running line was cut: its batch was cancelled (past the grace) or expired. */
export type CutReason = "cancelled" | "expired";

export interface LineCall {
  line: ClaimedLine;
  endpoint: string;
  token: string;
  channel: string | undefined;
  priority: number;
  signal: AbortSignal;
  /** why the signal was aborted */
  cut: () => CutReason | undefined;
  /** an interactive call wants the line's slot: the line is to stop and run again later */
  preempt?: () => void;
}

/** A never-run line's error line (cancelled or expired). */
export function neverRan(customId: string, reason: CutReason): string {
  const code = reason === "cancelled" ? "batch_cancelled" : "batch_expired";
  const message = reason === "cancelled" ? "The batch was cancelled before this request ran." : "The batch expired before this request ran.";
  return JSON.stringify({ id: newId("batch_req_"), custom_id: customId, response: null, error: { code, message } });
}

export async function runLine(call: (input: CallInput) => Promise<CallAnswer>, c: LineCall): Promise<LineOutcome> {
  let kept: { row: UsageRow; scopes: string[] } | undefined;
  const requestId = randomUUID();
  const answer = await call({
    headers: { authorization: `Bearer ${c.token}`, "content-type": "application/json" },
    path: c.endpoint,
    bytes: Buffer.from(c.line.body),
    signal: c.signal,
    requestId,
    internal: {
      priority: c.priority,
      channel: c.channel,
      paced: true,
      preempt: c.preempt,
      batch: { id: c.line.batchId, customId: c.line.customId },
      keepUsage: (row, scopes) => void (kept = { row, scopes }),
    },
  });
  const tokens = tokensOf(answer, kept?.row);
  const reason = c.cut();
  if (reason) return { state: reason, output: neverRan(c.line.customId, reason), ...tokens, usage: kept };
  const output = JSON.stringify({
    id: newId("batch_req_"),
    custom_id: c.line.customId,
    response: { status_code: answer.status, request_id: answer.headers["x-request-id"] ?? answer.facts.requestId ?? requestId, body: answer.body },
    error: null,
  });
  return { state: answer.status < 400 ? "done" : "failed", output, ...tokens, usage: kept };
}

/** The line's tokens: its usage row's, else the answer's `usage`. */
function tokensOf(answer: CallAnswer, row: UsageRow | undefined): { inputTokens: number; outputTokens: number } {
  if (row) return { inputTokens: row.inputTokens, outputTokens: row.outputTokens };
  const usage = (answer.body as { usage?: Record<string, unknown> } | undefined)?.usage ?? {};
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  return { inputTokens: n(usage.prompt_tokens ?? usage.input_tokens), outputTokens: n(usage.completion_tokens ?? usage.output_tokens) };
}
