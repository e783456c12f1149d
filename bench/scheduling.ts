// The bench's scheduling section (docs/routing.md#priority-and-fairness): one simulated replica that
// runs 2 calls at a time (bench/fleet/replica.ts), behind one Sluice with two channels to it — one
// with `concurrency: 2` (the gateway holds the queue and orders it) and one without (every call goes
// straight on, the engine's FIFO queue orders it). Two cases on each, one after the other:
//   priority  30 calls of a priority-0 app at once (the flood), and 6 calls of a priority-10 app sent
//             into it, one every 2.5 service times: the interactive median wait against the flood's
//   fairness  30 calls of app A at once, and 6 of app B (same priority) sent into them likewise
// A call's wait is its time to the first token (the replica's prefill of these short prompts is
// well under a millisecond).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { median } from "./autocannon-case.js";
import { startReplica } from "./fleet/replicas.js";
import { spawnNodeServer } from "./node-process.js";

const FLOOD = 30;
const TRICKLE = 6;
const RUNNING = 2;
const DECODE_MS = 10;
const MAX_TOKENS = 20;
/** one call's time on the replica */
const SERVICE_MS = DECODE_MS * MAX_TOKENS;
const TRICKLE_EVERY_MS = 2.5 * SERVICE_MS;
const KEYS = { batch: "sk-bench-batch-0001", live: "sk-bench-live-0001", teamA: "sk-bench-team-a-0001", teamB: "sk-bench-team-b-0001" };

export interface SchedulingCase {
  /** `gateway queue` or `engine FIFO` */
  queue: string;
  case: "priority" | "fairness";
  /** median wait (ms) of the 30 calls sent at once */
  floodMedianMs: number;
  /** median wait (ms) of the 6 calls sent into them */
  trickleMedianMs: number;
  ratio: number;
  errors: number;
}

export async function measureScheduling(): Promise<SchedulingCase[]> {
  const replica = await startReplica({ name: "r1", maxRunning: RUNNING, decodeMsPerToken: DECODE_MS });
  const dir = await mkdtemp(join(tmpdir(), "sluice-bench-scheduling-"));
  try {
    const configPath = join(dir, "config.json");
    await writeFile(configPath, JSON.stringify(schedulingConfig(replica.url, join(dir, "bench.db"))));
    const sluice = await spawnNodeServer("Sluice (scheduling)", { args: ["dist/main.js", "--config", configPath], readyPath: "/healthz", ready: (s) => s === 200, outputFile: join(dir, "sluice.log") });
    try {
      const results: SchedulingCase[] = [];
      // warm-up: the first calls through a fresh process pay for its compilation and connections
      await Promise.all(["sim", "sim-fifo"].flatMap((model) => Array.from({ length: RUNNING * 2 }, () => timeToFirstToken(sluice.url, model, KEYS.batch))));
      for (const [queue, model] of [["gateway queue", "sim"], ["engine FIFO", "sim-fifo"]] as const) {
        console.error(`scheduling: ${queue}`);
        results.push(await runCase(sluice.url, model, queue, "priority", KEYS.batch, KEYS.live));
        results.push(await runCase(sluice.url, model, queue, "fairness", KEYS.teamA, KEYS.teamB));
      }
      return results;
    } finally {
      await sluice.stop();
    }
  } finally {
    await replica.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function runCase(url: string, model: string, queue: string, name: SchedulingCase["case"], floodKey: string, trickleKey: string): Promise<SchedulingCase> {
  const flood = Array.from({ length: FLOOD }, () => timeToFirstToken(url, model, floodKey));
  const trickle: Array<Promise<number>> = [];
  for (let i = 0; i < TRICKLE; i++) {
    await sleep(i === 0 ? SERVICE_MS / 2 : TRICKLE_EVERY_MS);
    trickle.push(timeToFirstToken(url, model, trickleKey));
  }
  const floodWaits = await Promise.all(flood);
  const trickleWaits = await Promise.all(trickle);
  const ok = (waits: number[]) => waits.filter((w) => Number.isFinite(w));
  const floodMedianMs = ok(floodWaits).length > 0 ? median(ok(floodWaits)) : Number.NaN;
  const trickleMedianMs = ok(trickleWaits).length > 0 ? median(ok(trickleWaits)) : Number.NaN;
  const errors = floodWaits.length + trickleWaits.length - ok(floodWaits).length - ok(trickleWaits).length;
  return { queue, case: name, floodMedianMs, trickleMedianMs, ratio: trickleMedianMs / floodMedianMs, errors };
}

/** ms from sending a streamed chat to its first content chunk; NaN when the call failed. */
async function timeToFirstToken(url: string, model: string, key: string): Promise<number> {
  const started = performance.now();
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ model, stream: true, max_tokens: MAX_TOKENS, messages: [{ role: "user", content: "Say something." }] }),
    });
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      return Number.NaN;
    }
    let first = Number.NaN;
    const decoder = new TextDecoder();
    for await (const part of res.body) {
      if (Number.isNaN(first) && decoder.decode(part as Uint8Array, { stream: true }).includes('"content"')) first = performance.now() - started;
    }
    return first;
  } catch {
    return Number.NaN;
  }
}

function schedulingConfig(replicaUrl: string, dbPath: string) {
  const key = (name: string, appId: string, value: string) => ({ name, kind: "app", appId, key: value });
  const app = (id: string, priority = 0) => ({ id, model: "sim", models: ["sim", "sim-fifo"], priority });
  return {
    server: { log: { level: "warn" } },
    store: { driver: "sqlite", path: dbPath },
    channels: [
      { name: "gated", baseUrl: replicaUrl, models: ["sim"], concurrency: RUNNING, maxQueue: 1024, queueTimeoutMs: 60_000 },
      { name: "fifo", baseUrl: replicaUrl, models: ["sim-fifo"] },
    ],
    llmModels: [
      { model: "sim", maxContext: 4_000, maxResponse: 100 },
      { model: "sim-fifo", maxContext: 4_000, maxResponse: 100 },
    ],
    apps: [app("batch"), app("live", 10), app("team-a"), app("team-b")],
    apiKeys: [key("batch", "batch", KEYS.batch), key("live", "live", KEYS.live), key("team-a", "team-a", KEYS.teamA), key("team-b", "team-b", KEYS.teamB)],
  };
}

/** The section's lines of the report. */
export function formatScheduling(cases: SchedulingCase[]): string {
  const lines = [`\nScheduling (one replica running ${RUNNING} at a time, ${SERVICE_MS} ms a call; wait = time to first token, medians)`];
  for (const c of cases) {
    const who = c.case === "priority" ? ["flood of 30 (priority 0)", "6 interactive (priority 10)"] : ["app A (30 at once)", "app B (6, same priority)"];
    lines.push(`  ${c.queue.padEnd(14)} ${c.case.padEnd(9)} ${who[0]}: ${c.floodMedianMs.toFixed(0)} ms; ${who[1]}: ${c.trickleMedianMs.toFixed(0)} ms; ratio ${c.ratio.toFixed(2)}${c.errors ? `; ${c.errors} calls failed` : ""}`);
  }
  return lines.join("\n");
}
