// The batch runner (docs/batches.md#how-lines-run): one loop per instance that runs up to
// `batches.concurrency` lines at once, claiming lines of models whose channels have headroom,
// ordered by the digest of model + system prompt; renews its claims' leases, cuts lines of batches
// cancelled (after the grace) or expired, finalizes batches whose lines are over, and purges old
// files and batches. It polls every POLL_MS while lines wait for headroom and sleeps otherwise
// (every timer unref'd); a new or cancelled batch wakes it.
import { randomUUID } from "node:crypto";
import type { BatchesConfig } from "../config/batches-schema.js";
import type { CallAnswer, CallInput } from "../metered/memory-call.js";
import type { HeadroomSlot } from "../upstream/headroom.js";
import { finalizeBatch } from "./finalize.js";
import { runLine, type CutReason } from "./line-run.js";
import type { BatchStore, ClaimedLine, StoredBatch } from "../store/batch-types.js";

const POLL_MS = 75;
const IDLE_MS = 1_000;
const PURGE_EVERY_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The kind a batch endpoint's lines are run as. */
const KINDS: Record<string, "chat" | "embeddings" | "completions" | "responses"> = {
  "/v1/chat/completions": "chat",
  "/v1/embeddings": "embeddings",
  "/v1/completions": "completions",
  "/v1/responses": "responses",
};

export interface RunnerDeps {
  store: BatchStore;
  config: () => BatchesConfig;
  call: (kind: "chat" | "embeddings" | "completions" | "responses", input: CallInput) => Promise<CallAnswer>;
  /** the channels of a model with room for a batch line now, as its router judges them
   *  (docs/batches.md#idle-capacity): the lines already in their gates counted */
  headroom: (model: string) => HeadroomSlot[];
  /** the stand-in token a line runs with, for its batch's key name (src/auth/stand-ins.ts) */
  tokenFor: (keyName: string) => string;
  clock: () => number;
  /** a line ended (`outcome`: done, failed, cancelled, expired, lost) */
  lineEnded?: (endpoint: string, outcome: string) => void;
  /** this runner's running lines, and the batches by status, after each round */
  counted?: (running: number, batches: Partial<Record<string, number>>) => void;
  log: (message: string) => void;
}

interface Running {
  line: ClaimedLine;
  channel: string | undefined;
  abort: AbortController;
  cut?: CutReason;
  /** stopped for an interactive call (docs/batches.md#preemption) */
  preempted?: boolean;
}

export interface BatchRunner {
  wake(): void;
  /** Stops claiming, cuts the lines running (they are run again elsewhere or after a restart) and waits for them. */
  stop(): Promise<void>;
}

export function createBatchRunner(deps: RunnerDeps): BatchRunner {
  const owner = randomUUID();
  const running = new Map<string, Running>();
  const ends = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  let busy = false;
  let again = false;
  let stopped = false;
  let renewedAt = 0;
  let purgedAt = 0;
  const lineKey = (l: { batchId: string; line: number }) => `${l.batchId}#${l.line}`;

  function schedule(ms: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => void round(), ms);
    timer.unref();
  }

  async function round(): Promise<void> {
    if (busy) return void (again = true);
    busy = true;
    let waiting = false;
    try {
      const active = await deps.store.batchesIn(["in_progress", "cancelling", "finalizing"]);
      await keepUp(active);
      if (!stopped) waiting = await fill(active);
      deps.counted?.(running.size, await deps.store.countBatches());
    } catch (err) {
      deps.log(`batches: a round of the runner failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      busy = false;
    }
    const next = again ? 0 : waiting || running.size > 0 ? POLL_MS : IDLE_MS;
    again = false;
    schedule(next);
  }

  /** Leases renewed; lines of cancelled (past the grace) and expired batches cut; batches whose lines are over finalized; old ones purged. */
  async function keepUp(active: StoredBatch[]): Promise<void> {
    const cfg = deps.config();
    const now = deps.clock();
    if (running.size > 0 && now - renewedAt >= cfg.leaseMs / 3) {
      renewedAt = now;
      await deps.store.renew(owner, [...running.values()].map((r) => r.line), now + cfg.leaseMs);
    }
    for (const s of active) {
      const b = s.batch;
      if (b.expired_at === null && b.status !== "finalizing" && now >= b.expires_at * 1000) {
        const expired = { ...b, status: "finalizing" as const, expired_at: Math.floor(now / 1000), finalizing_at: Math.floor(now / 1000) };
        if (await deps.store.updateBatch(expired, [b.status], { from: ["pending"], to: "expired" })) s.batch = expired;
      }
      const cutting = s.batch.expired_at !== null ? "expired" : b.cancelling_at !== null && now >= b.cancelling_at * 1000 + cfg.cancelGraceMs ? "cancelled" : undefined;
      if (cutting) {
        for (const r of running.values()) if (r.line.batchId === b.id && !r.cut) ((r.cut = cutting), r.abort.abort());
        await deps.store.dropLapsed(b.id, now, cutting);
      }
      const states = await deps.store.lineStates(b.id);
      if (!states.pending && !states.running) await finalizeBatch(deps.store, s, now);
    }
    if (now - purgedAt >= PURGE_EVERY_MS) {
      purgedAt = now;
      await deps.store.purge(now - cfg.retentionDays * DAY_MS);
    }
  }

  /** Claims lines where there is headroom and starts them; whether lines wait for headroom. */
  async function fill(active: StoredBatch[]): Promise<boolean> {
    const cfg = deps.config();
    let free = cfg.concurrency - running.size;
    if (free <= 0) return false;
    const now = deps.clock();
    let waiting = false;
    const batches = new Map(active.map((s) => [s.batch.id, s]));
    for (const model of await deps.store.claimableModels(now)) {
      if (free <= 0) return true;
      const slots = deps.headroom(model).filter((s) => s.free > 0);
      const room = Math.min(free, slots.reduce((sum, s) => sum + s.free, 0));
      if (room === 0) {
        waiting = true;
        continue;
      }
      const claimed = await deps.store.claim(model, room, owner, now, now + cfg.leaseMs);
      for (const line of claimed) {
        const slot = slots.find((s) => s.free > 0)!;
        slot.free--;
        free--;
        start(line, slot.channel, batches.get(line.batchId) ?? (await deps.store.findBatch(line.batchId)), cfg.priority);
      }
    }
    return waiting;
  }

  function start(line: ClaimedLine, channel: string, batch: StoredBatch | undefined, priority: number): void {
    const r: Running = { line, channel, abort: new AbortController() };
    running.set(lineKey(line), r);
    const endpoint = batch?.batch.endpoint ?? "/v1/chat/completions";
    const run = async () => {
      if (!batch) return;
      const outcome = await runLine((input) => deps.call(KINDS[endpoint]!, input), {
        line,
        endpoint,
        token: deps.tokenFor(batch.keyName),
        channel,
        priority,
        signal: r.abort.signal,
        cut: () => r.cut,
        preempt: () => {
          r.preempted = true;
          r.abort.abort();
        },
      });
      // stopped: the line is left to its lease (run again elsewhere or after a restart), unless it ended whole
      if (stopped && r.cut === undefined && r.abort.signal.aborted) return;
      // preempted before it ended whole: its lease given up, it runs again (its partial usage is not kept)
      if (r.preempted && r.cut === undefined && outcome.state !== "done") {
        await deps.store.renew(owner, [line], 0);
        return deps.lineEnded?.(endpoint, "preempted");
      }
      const mine = await deps.store.finishLine(line.batchId, line.line, owner, outcome);
      deps.lineEnded?.(endpoint, mine ? outcome.state : "lost");
    };
    const end = run()
      .catch((err: unknown) => deps.log(`batches: line ${line.line} of ${line.batchId} failed: ${err instanceof Error ? err.message : String(err)}`))
      .finally(() => {
        running.delete(lineKey(line));
        ends.delete(end);
        if (!stopped) schedule(0);
      });
    ends.add(end);
  }

  schedule(0);
  return {
    wake: () => schedule(0),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      for (const r of running.values()) r.abort.abort();
      await Promise.allSettled([...ends]);
    },
  };
}
