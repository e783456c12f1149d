// What a call made by Sluice itself (a batch line, docs/batches.md#how-lines-run) asks of the one
// pipeline beyond an HTTP request's: its place in the queues, the channel it may use, what its usage
// row carries, and that its usage row is handed back to be written in the caller's own commit.
import type { UsageRow } from "../store/types.js";

export interface InternalCall {
  /** the caller's priority for this call (a batch line: `batches.priority`); aging never lifts a
   *  negative priority above 0 */
  priority?: number;
  /** the only channel of the model the call may post to (the one found with headroom) */
  channel?: string;
  /** the batch and line the usage row carries */
  batch?: { id: string; customId: string };
  /** the usage row and its spend scopes handed over instead of written: the caller writes them in
   *  its own commit (a batch line's output and usage row together) */
  keepUsage?: (row: UsageRow, spendScopes: string[]) => void;
  /** paced by idle capacity: QPM, TPM and maxConcurrent do not apply (budgets do) */
  paced?: boolean;
  /** at a priority below 0: called when an interactive call would wait for this call's slot; the
   *  caller then aborts the call (docs/batches.md#preemption) */
  preempt?: () => void;
}
