// The bench's `batches` section (docs/performance.md#batches): simulated replicas (bench/fleet/replica.ts)
// behind Sluice, agent sessions (bench/fleet/bench.ts) alone and then with a 2,000-line chat batch
// submitted at once through OpenAI's SDK (files.create + batches.create), in interleaved rounds.
// Measured: the sessions' TTFT p95 with the batch against without; the batch's lines per second
// while the sessions ran, against the idle capacity the sessions leave — the lines per second the
// replicas take posted straight to them (no gateway) into the slots the sessions leave (each
// replica's `maxRunning` less its share of the sessions) while the same sessions run; and, for
// scale, into every slot beside the sessions and with nothing else.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { spawnNodeServer } from "../node-process.js";
import { decisionCounts, figures, KEY, MODEL, quantile, runOnce, warmUp, type FleetOptions } from "./bench.js";
import { startReplicas, type Replica, type ReplicaStats } from "./replicas.js";

export interface BatchesOptions extends FleetOptions {
  lines: number;
  /** the replicas' `--max-running` and each channel's `concurrency` */
  maxRunning: number;
  /** `batches.reserve` */
  reserve: number;
}

/** BENCH_BATCHES_RESERVE: another `batches.reserve` than the section's own 0.125 */
export const BATCHES_DEFAULTS: BatchesOptions = { replicas: 4, agents: 4, sessions: 8, turns: 8, rounds: 2, slow: 1, lines: 2_000, maxRunning: 8, reserve: Number(process.env.BENCH_BATCHES_RESERVE ?? 0.125), staggerMs: Number(process.env.BENCH_BATCHES_STAGGER_MS ?? 250) };

export interface BatchesResult {
  options: BatchesOptions;
  ttftP95Alone: number;
  ttftP95WithBatch: number;
  ttftP50Alone: number;
  ttftP50WithBatch: number;
  /** each round's p95 with the batch over its p95 alone: their median and range */
  roundRatios: number[];
  /** lines/s of the batch while the sessions ran */
  batchLinesPerSecond: number;
  /** lines/s straight to the replicas with nothing else; into the slots the sessions leave beside
   *  them (the idle capacity); into every slot beside them */
  capacityLinesPerSecond: number;
  idleLinesPerSecond: number;
  fullLinesPerSecond: number;
  /** the slots per replica the idle capacity's lines were posted into */
  idleSlots: number;
  /** the sessions' TTFT p95 beside the idle capacity's lines and beside every slot's */
  ttftP95Idle: number;
  ttftP95Full: number;
  /** batch lines preempted by interactive calls, per round's batch case */
  preemptedPerRound: number;
  /** the sessions' route decisions alone and with the batch: prefix, pinned, spilled, least_loaded */
  decisions: { alone: number[]; withBatch: number[] };
  failed: number;
}

const lineBody = (i: number) => ({ model: MODEL, max_tokens: 8, messages: [{ role: "system", content: `Grade the answer. Rubric ${i % 4}.` }, { role: "user", content: `answer ${i}` }] });

/** Lines posted straight to the replicas, `perReplica` at a time each, until `stop`; lines/s. */
async function direct(replicas: Replica[], perReplica: number, stop: Promise<unknown>): Promise<number> {
  let done = 0;
  let over = false;
  void stop.then(() => (over = true));
  const started = performance.now();
  await Promise.all(
    replicas.flatMap((r) =>
      Array.from({ length: perReplica }, async (_, w) => {
        for (let i = w; !over; i += perReplica) {
          const res = await fetch(`${r.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify(lineBody(i)) });
          await res.arrayBuffer();
          if (res.status === 200) done++;
        }
      }),
    ),
  );
  return done / ((performance.now() - started) / 1000);
}

async function startBatchSluice(replicas: Replica[], o: BatchesOptions) {
  const dir = await mkdtemp(join(tmpdir(), "sluice-batches-"));
  const config = {
    server: { log: { level: "warn" } },
    store: { driver: "sqlite", path: join(dir, "batches.db") },
    channels: replicas.map((r) => ({ name: r.name, baseUrl: r.url, models: [MODEL], concurrency: o.maxRunning, engineMetrics: { url: "auto", intervalMs: 500 }, healthCheck: { intervalMs: 5000 } })),
    llmModels: [{ model: MODEL, maxContext: 200_000, maxResponse: 64 }],
    apps: [{ id: "agents", model: MODEL }],
    apiKeys: [{ name: "agents", kind: "app", appId: "agents", key: KEY }],
    // every line the headroom of all channels allows at once
    batches: { concurrency: replicas.length * o.maxRunning, reserve: o.reserve },
  };
  await writeFile(join(dir, "config.json"), JSON.stringify(config));
  const sluice = await spawnNodeServer("Sluice (batches)", { args: ["dist/main.js", "--config", join(dir, "config.json")], readyPath: "/healthz", ready: (s) => s === 200, outputFile: join(dir, "sluice.log") });
  return { ...sluice, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

type Acc = { ttfts: number[]; stats: Array<[ReplicaStats[], ReplicaStats[]]>; failed: number };
const acc = (): Acc => ({ ttfts: [], stats: [], failed: 0 });

export async function measureBatches(o: BatchesOptions = BATCHES_DEFAULTS, seconds = 4): Promise<BatchesResult> {
  const replicas = await startReplicas(o.replicas, { maxRunning: o.maxRunning });
  const sluice = await startBatchSluice(replicas, o);
  const client = new OpenAI({ apiKey: KEY, baseURL: `${sluice.url}/v1` });
  const alone = acc();
  const withBatch = acc();
  const rates: number[] = [];
  const idle: number[] = [];
  const full: number[] = [];
  const capacity: number[] = [];
  const [besideIdle, besideFull] = [acc(), acc()];
  let preempted = 0;
  const decisions = { alone: [0, 0, 0, 0], withBatch: [0, 0, 0, 0] };
  // the slots the sessions leave: each replica's share of them at most in flight at once
  const idleSlots = Math.max(1, o.maxRunning - Math.ceil(o.sessions / o.replicas));
  const roundRatios: number[] = [];
  try {
    await warmUp(replicas, o);
    for (let round = 0; round < o.rounds; round++) {
      capacity.push(await direct(replicas, o.maxRunning, new Promise((r) => setTimeout(r, seconds * 1000))));
      const cases = round % 2 === 0 ? (["alone", "batch", "idle", "full"] as const) : (["full", "idle", "batch", "alone"] as const);
      const from = [alone.ttfts.length, withBatch.ttfts.length];
      for (const c of cases) {
        console.error(`batches: round ${round + 1}/${o.rounds}, ${c}`);
        const run = `${round}-${c}`;
        const decided = c === "alone" || c === "batch" ? await decisionCounts(sluice.url) : undefined;
        if (c === "alone") await runOnce(sluice.url, replicas, o, run, alone);
        else if (c === "idle" || c === "full") {
          let end!: () => void;
          const ended = new Promise<void>((r) => (end = r));
          const flood = direct(replicas, c === "idle" ? idleSlots : o.maxRunning, ended);
          await runOnce(sluice.url, replicas, o, run, c === "idle" ? besideIdle : besideFull);
          end();
          (c === "idle" ? idle : full).push(await flood);
        } else {
          const { rate, preempted: p } = await withLines(client, sluice.url, replicas, o, run, withBatch);
          rates.push(rate);
          preempted += p;
        }
        if (decided) {
          const now = await decisionCounts(sluice.url);
          const into = c === "alone" ? decisions.alone : decisions.withBatch;
          now.forEach((n, i) => (into[i] = (into[i] ?? 0) + n - decided[i]!));
        }
      }
      roundRatios.push(quantile(withBatch.ttfts.slice(from[1]), 0.95) / quantile(alone.ttfts.slice(from[0]), 0.95));
    }
  } finally {
    await sluice.stop().then(() => sluice.cleanup());
    await Promise.all(replicas.map((r) => r.stop()));
  }
  const median = (xs: number[]) => quantile(xs, 0.5);
  const [without, beside] = [figures(alone, replicas.length), figures(withBatch, replicas.length)];
  return {
    options: o,
    ttftP95Alone: without.ttftP95,
    ttftP95WithBatch: beside.ttftP95,
    ttftP50Alone: without.ttftP50,
    ttftP50WithBatch: beside.ttftP50,
    roundRatios,
    batchLinesPerSecond: median(rates),
    capacityLinesPerSecond: median(capacity),
    idleLinesPerSecond: median(idle),
    fullLinesPerSecond: median(full),
    idleSlots,
    preemptedPerRound: preempted / o.rounds,
    decisions,
    ttftP95Idle: quantile(besideIdle.ttfts, 0.95),
    ttftP95Full: quantile(besideFull.ttfts, 0.95),
    failed: alone.failed + withBatch.failed,
  };
}

/** A batch of `o.lines` submitted at once, then the sessions; the lines done per second while they
 *  ran, and the lines preempted meanwhile. */
async function withLines(client: OpenAI, url: string, replicas: Replica[], o: BatchesOptions, run: string, into: Acc): Promise<{ rate: number; preempted: number }> {
  const text = Array.from({ length: o.lines }, (_, i) => JSON.stringify({ custom_id: `${run}-${i}`, method: "POST", url: "/v1/chat/completions", body: lineBody(i) })).join("\n");
  const file = await client.files.create({ file: await toFile(Buffer.from(text), `${run}.jsonl`), purpose: "batch" });
  const batch = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  // the batch object's counts are set when it finalizes: lines done so far are read from /metrics
  const before = await linesEnded(url);
  const started = performance.now();
  await runOnce(url, replicas, o, run, into);
  const after = await linesEnded(url);
  const rate = (after.done - before.done) / ((performance.now() - started) / 1000);
  await client.batches.cancel(batch.id);
  return { rate, preempted: after.preempted - before.preempted };
}

/** Batch lines so far by outcome, from sluice_batch_lines_total on /metrics: done, and preempted. */
async function linesEnded(url: string): Promise<{ done: number; preempted: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const n = { done: 0, preempted: 0 };
  for (const m of text.matchAll(/^sluice_batch_lines_total\{[^}]*outcome="(done|preempted)"[^}]*\} (\S+)$/gm)) n[m[1] as "done" | "preempted"] += Number(m[2]);
  return n;
}

/** The section's lines for the report. */
export function batchesLines(r: BatchesResult): string[] {
  const o = r.options;
  const ratio = r.ttftP95WithBatch / r.ttftP95Alone;
  const share = r.batchLinesPerSecond / r.idleLinesPerSecond;
  return [
    `batches: ${o.replicas} replicas (max ${o.maxRunning} running, channel concurrency ${o.maxRunning}, batches.reserve ${o.reserve}), ${o.sessions} sessions × ${o.turns} turns, a ${o.lines}-line batch, ${o.rounds} rounds`,
    `  interactive TTFT p95: ${r.ttftP95Alone.toFixed(0)} ms alone, ${r.ttftP95WithBatch.toFixed(0)} ms with the batch (${ratio.toFixed(2)}×, target ≤ 1.10×); p50 ${r.ttftP50Alone.toFixed(0)} ms, ${r.ttftP50WithBatch.toFixed(0)} ms`,
    `  per round, p95 with / alone: median ${quantile(r.roundRatios, 0.5).toFixed(2)}× (${Math.min(...r.roundRatios).toFixed(2)}–${Math.max(...r.roundRatios).toFixed(2)})`,
    `  batch lines/s beside the sessions: ${r.batchLinesPerSecond.toFixed(1)}; idle capacity left by the sessions (lines straight to the replicas, ${r.idleSlots} of ${o.maxRunning} slots each) ${r.idleLinesPerSecond.toFixed(1)} lines/s (${(share * 100).toFixed(0)} %, target ≥ 70 %)`,
    `  for scale: straight into all ${o.maxRunning} slots beside the sessions ${r.fullLinesPerSecond.toFixed(1)} lines/s (${((r.batchLinesPerSecond / r.fullLinesPerSecond) * 100).toFixed(0)} %); replicas alone ${r.capacityLinesPerSecond.toFixed(1)} lines/s`,
    `  the sessions' TTFT p95 beside the lines straight to the replicas: ${r.ttftP95Idle.toFixed(0)} ms (${r.idleSlots} slots), ${r.ttftP95Full.toFixed(0)} ms (all ${o.maxRunning})`,
    `  the sessions' route decisions, prefix/pinned/spilled/least loaded: ${r.decisions.alone.join("/")} alone, ${r.decisions.withBatch.join("/")} with the batch`,
    `  batch lines preempted by interactive calls: ${r.preemptedPerRound.toFixed(0)} a round; failed calls: ${r.failed}`,
  ];
}
