// `npm run bench`: Sluice against the bare floor proxy and the test upstream itself — throughput
// under load (autocannon), latency and TTFT at one connection, memory with 1,000 open streams.
// BENCH_SECONDS sets the length of each load run (default 10), BENCH_WARMUP_SECONDS the unmeasured
// run before it (default 3).
import { availableParallelism, loadavg } from "node:os";
import { build } from "esbuild";
import { startUpstream, type Upstream } from "../test/support/upstream.js";
import { runLoad } from "./autocannon-case.js";
import { chatBody, expectAnswer } from "./chat-request.js";
import { measureLatency } from "./latency.js";
import { readRssMb, spawnNodeServer, type NodeServer } from "./node-process.js";
import { withOpenStreams } from "./open-streams.js";
import { printReport, type CaseResult, type MemoryResult, type Mode, type TargetName } from "./report.js";
import { startSluice } from "./sluice-process.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
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
  const settings = { seconds: SECONDS, warmupSeconds: WARMUP_SECONDS, loadAverage: loadavg()[0] ?? 0, cores: availableParallelism() };
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

    // 2. Throughput and latency per target and mode.
    const targets: Target[] = [
      { name: "direct", url: upstream.url },
      { name: "floor", url: floor.url, pid: floor.pid },
    ];
    const cases: CaseResult[] = [];
    for (const mode of ["non-stream", "stream"] as const) {
      for (const target of targets) cases.push(await measureCase(target, mode));
      cases.push(typeof sluice === "string" ? failed("sluice", mode, sluice) : await measureCase({ name: "sluice", url: sluice.url, pid: sluice.pid }, mode));
    }
    cases.push(typeof sluice === "string" ? failed("sluice", "chatId", sluice) : await measureCase({ name: "sluice", url: sluice.url, pid: sluice.pid }, "chatId"));

    // 3. Memory with many slow streams open.
    const memory = typeof sluice === "string" ? { streams: OPEN_STREAMS, error: sluice } : await measureMemory(upstream, sluice, floor);

    printReport(cases, memory, settings);
    if (cases.some((c) => c.error) || memory.error) process.exitCode = 1;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await upstream.close();
  }
}

async function measureCase(target: Target, mode: Mode): Promise<CaseResult> {
  const stream = mode === "stream";
  // Each autocannon connection keeps to its own conversation, so stored history grows as in real use.
  const bodyFor = mode === "chatId" ? (i: number) => chatBody(false, `bench-chat-${i % CHAT_IDS}`) : () => chatBody(stream);
  try {
    await expectAnswer(target.url, bodyFor(0));
    console.error(`${target.name} ${mode}: ${WARMUP_SECONDS} + ${SECONDS} s under load, then 1 connection`);
    const load = await runLoad(target.url, bodyFor, SECONDS, WARMUP_SECONDS, target.pid);
    const latency = await measureLatency(target.url, bodyFor(0), stream);
    return { target: target.name, mode, load, latency };
  } catch (err) {
    return failed(target.name, mode, errorMessage(err));
  }
}

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
