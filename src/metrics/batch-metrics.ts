// The batch families (docs/operations.md#metrics): lines ended by endpoint and outcome, the lines this
// instance runs, and the store's batches by status (docs/batches.md). Every label is a bounded set.
import { Counter, Gauge, type Registry } from "prom-client";
import type { BatchObserver } from "../observability/observer.js";

const ENDPOINTS = ["/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/responses"];
const OUTCOMES = ["done", "failed", "cancelled", "expired", "lost", "preempted"];
const STATUSES = ["validating", "failed", "in_progress", "finalizing", "completed", "expired", "cancelling", "cancelled"];

export function createBatchMetrics(registry: Registry): BatchObserver {
  const reg = { registers: [registry] };
  const lines = new Counter({
    name: "sluice_batch_lines_total",
    help: "Batch lines ended, by endpoint and outcome (done, failed, cancelled, expired, lost: taken over by another instance; preempted: stopped for an interactive call and run again).",
    labelNames: ["endpoint", "outcome"] as const,
    ...reg,
  });
  for (const endpoint of ENDPOINTS) for (const outcome of OUTCOMES) lines.inc({ endpoint, outcome }, 0);
  const batches = new Gauge({ name: "sluice_batches", help: "Batches in the store, by status.", labelNames: ["status"] as const, ...reg });
  for (const status of STATUSES) batches.set({ status }, 0);
  const running = new Gauge({ name: "sluice_batch_lines_running", help: "Batch lines this instance runs now.", ...reg });
  return {
    batchLine(endpoint, outcome) {
      lines.inc({ endpoint: ENDPOINTS.includes(endpoint) ? endpoint : "other", outcome: OUTCOMES.includes(outcome) ? outcome : "other" });
    },
    batchCounts(n, byStatus) {
      running.set(n);
      for (const status of STATUSES) batches.set({ status }, byStatus[status] ?? 0);
    },
  };
}
