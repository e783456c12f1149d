// `npm run bench`: Sluice against the bare floor proxy and the test upstream itself — throughput
// under load (autocannon), latency and TTFT at one connection, memory with 1,000 open streams.
// Cases compared by a ratio run interleaved: after a warm-up each, every case of a group runs one
// slice per round, in an order that turns each round, so that the machine's drift (large on shared
// 2-core machines) falls on all of them alike. BENCH_SECONDS sets each case's measured time
// (default 10, split over BENCH_ROUNDS rounds, default 5), BENCH_WARMUP_SECONDS its unmeasured
// warm-up (default 3).
import { availableParallelism, loadavg } from "node:os";
import { build } from "esbuild";
import { startUpstream, type Upstream } from "../test/support/upstream.js";
import { mergeLoads, runLoad, type LoadResult } from "./autocannon-case.js";
import { chatBody, expectAnswer } from "./chat-request.js";
import { measureEventLoopLag } from "./event-loop-lag.js";
import { measureLatency } from "./latency.js";
import { readRssMb, spawnNodeServer, type NodeServer } from "./node-process.js";
import { withOpenStreams } from "./open-streams.js";
import { printReport, type CaseResult, type MemoryResult, type Mode, type TargetName } from "./report.js";
import { startSluice } from "./sluice-process.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const ROUNDS = Math.max(1, Math.round(Number(process.env.BENCH_ROUNDS ?? 5)));
const STREAM_CHUNKS = 20;
const CHAT_IDS = 32;
const OPEN_STREAMS = 1000;
const SLOW_CHUNK_MS = 30_000;
const FLOOR_SOURCES = ["bench/floor-proxy-process.ts", "bench/floor-proxy.ts"];
const FLOOR_OUT = ".bench-out";

interface Target {
  name: TargetName;
  url: string;
  /** the target's process, when it has one of its own */
  pid?: number;
}

async function main(): Promise<void> {
  const settings = { seconds: SECONDS, rounds: ROUNDS, warmupSeconds: WARMUP_SECONDS, loadAverage: loadavg()[0] ?? 0, cores: availableParallelism() };
  const upstream = await startUpstream({ record: false, chunks: STREAM_CHUNKS });
  const servers: NodeServer[] = [];
  try {
    // 1. Start the proxies, each in its own process; the floor proxy forwards GET /healthz too.
    // Both proxies run as plain JavaScript, as Sluice does after `npm run build`.
    await build({ entryPoints: FLOOR_SOURCES, outdir: FLOOR_OUT, platform: "node", format: "esm", target: "node20", logLevel: "warning" });
    const floor = await spawnNodeServer("floor proxy", {
      args: [`${FLOOR_OUT}/floor-proxy-process.js`, "--upstream", upstream.url, "--key", "bench-channel-key"],
      readyPath: "/healthz",
      ready: () => true,
    });
    servers.push(floor);
    const sluice = await startSluice(upstream.url).catch((err: unknown) => errorMessage(err));
    if (typeof sluice !== "string") servers.push(sluice);
    else console.error(`\n${sluice}\n\nGoing on with the upstream and the floor proxy only.\n`);

    // 2. Throughput, interleaved within each group, then latency per case. The chatId case runs
    // with the stateless non-stream cases, the baseline of its ratio.
    const direct: Target = { name: "direct", url: upstream.url };
    const floorTarget: Target = { name: "floor", url: floor.url, pid: floor.pid };
    const sluiceTarget: Target | string = typeof sluice === "string" ? sluice : { name: "sluice", url: sluice.url, pid: sluice.pid };
    const cases: CaseResult[] = [];
    for (const group of [["non-stream", "chatId"], ["stream"]] as const) {
      const members: Array<[Target | string, Mode]> = [];
      for (const mode of group) {
        if (mode !== "chatId") members.push([direct, mode], [floorTarget, mode]);
        members.push([sluiceTarget, mode]);
      }
      cases.push(...(await measureGroup(members)));
    }
    // 3. Memory with many slow streams open.
    const memory = typeof sluice === "string" ? { streams: OPEN_STREAMS, error: sluice } : await measureMemory(upstream, sluice, floor);
    // 4. Event-loop lag under load with a 2 MB single-word body each second.
    const lag = typeof sluice === "string" ? undefined : await measureEventLoopLag(sluice.url, SECONDS, sluice.pid).catch((err: unknown) => errorMessage(err));

    printReport(cases, memory, settings, lag);
    if (cases.some((c) => c.error) || memory.error) process.exitCode = 1;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await upstream.close();
  }
}

interface Running {
  target: Target;
  mode: Mode;
  body: (connection: number) => string;
  slices: LoadResult[];
  error?: string;
}

/** Warms every case up, runs ROUNDS interleaved rounds of SECONDS / ROUNDS each, then measures
 *  each case's latency at one connection. A target given as a string failed to start. */
async function measureGroup(members: Array<[Target | string, Mode]>): Promise<CaseResult[]> {
  const failures: CaseResult[] = [];
  const running: Running[] = [];
  for (const [target, mode] of members) {
    if (typeof target === "string") failures.push(failed("sluice", mode, target));
    else running.push({ target, mode, body: bodyFor(mode), slices: [] });
  }
  const slice = SECONDS / ROUNDS;
  console.error(`${running.map(label).join(", ")}: ${WARMUP_SECONDS} s warm-up each, then ${ROUNDS} rounds of ${slice} s each`);
  for (const r of running) await guard(r, async () => {
    await expectAnswer(r.target.url, r.body(0));
    if (WARMUP_SECONDS > 0) await runLoad(r.target.url, r.body, WARMUP_SECONDS, 0, r.target.pid);
  });
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < running.length; i++) {
      const r = running[(i + round) % running.length]!;
      await guard(r, async () => void r.slices.push(await runLoad(r.target.url, r.body, slice, 0, r.target.pid)));
    }
  }
  const results: CaseResult[] = [];
  for (const r of running) {
    if (r.error) {
      results.push(failed(r.target.name, r.mode, r.error));
      continue;
    }
    const latency = await measureLatency(r.target.url, r.body(0), r.mode === "stream").catch((err: unknown) => errorMessage(err));
    if (typeof latency === "string") results.push(failed(r.target.name, r.mode, latency));
    else results.push({ target: r.target.name, mode: r.mode, load: mergeLoads(r.slices), rounds: r.slices.map((s) => s.rps), latency });
  }
  return [...results, ...failures];
}

/** Each autocannon connection of the chatId case keeps to its own conversation, so stored history
 *  grows as in real use. */
function bodyFor(mode: Mode): (connection: number) => string {
  if (mode === "chatId") return (i) => chatBody(false, `bench-chat-${i % CHAT_IDS}`);
  const body = chatBody(mode === "stream");
  return () => body;
}

/** Runs one step of a case; a case that failed once is skipped from then on. */
async function guard(r: Running, step: () => Promise<void>): Promise<void> {
  if (r.error) return;
  try {
    await step();
  } catch (err) {
    r.error = errorMessage(err);
  }
}

const label = (r: Running) => `${r.target.name} ${r.mode}`;

async function measureMemory(upstream: Upstream, sluice: NodeServer, floor: NodeServer): Promise<MemoryResult> {
  console.error(`memory: ${OPEN_STREAMS} open streams through Sluice, then through the floor proxy`);
  const body = chatBody(true);
  upstream.behave({ chunkDelayMs: SLOW_CHUNK_MS });
  try {
    const sluiceIdleMb = await readRssMb(sluice.pid);
    const sluiceMb = await withOpenStreams(sluice.url, body, OPEN_STREAMS, () => readRssMb(sluice.pid));
    const floorMb = await withOpenStreams(floor.url, body, OPEN_STREAMS, () => readRssMb(floor.pid));
    return { streams: OPEN_STREAMS, sluiceIdleMb, sluiceMb, floorMb };
  } catch (err) {
    return { streams: OPEN_STREAMS, error: errorMessage(err) };
  } finally {
    upstream.behave({ chunkDelayMs: 0 });
  }
}

function failed(target: TargetName, mode: Mode, error: string): CaseResult {
  return { target, mode, error };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
