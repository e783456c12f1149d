// `npm run bench`: Sluice against the floor (the cheapest correct pass-through, bench/floor-proxy.ts)
// and the test upstream itself (bench/upstream-process.ts), each in its own process, with Sluice
// configured as an operator runs it (all limits, metering, usage rows, request log at info).
//
// Sections, in order (a default run takes about 6-7 minutes on 2 cores):
//   non-stream   RPS and CPU/request at 32 connections: upstream alone, floor, Sluice, Sluice+chatId;
//                then latency at one connection (added p50/p99 over the upstream alone)
//   bodies       CPU/request of an app with logBodies "all" against one with "off" (non-stream)
//   stream       the same with 20-chunk streams (each chunk its own upstream write); added TTFT
//   realistic    100-chunk streams, chunks 2 ms apart, 100 connections: floor and Sluice
//   per-kb       CPU/request for 0.2-200 KB bodies (floor and Sluice) → µs per KB; 31 KB on a 32k
//                model against the same body on a 256k model (the byte bound fails on the first)
//   failover     two channels for one model, one failing 20 % of attempts before headers, against
//                two healthy ones; then the added latency of failed-over requests at one connection
//   embeddings   16 inputs of ~200 tokens per request, floor and Sluice (skipped, saying why, while
//                the build has no vectorModels or no POST /v1/embeddings)
//   dialects     the 20-chunk stream asked as Chat Completions, as Anthropic Messages and as a
//                Responses stream (nothing stored), interleaved: CPU/request of each dialect against chat
//   tracing      the 20-chunk stream through three more Sluices, interleaved: no tracing block, sampleRatio 0,
//                sampleRatio 1 exporting to an OTLP sink process: CPU/request against none, spans exported
//   lag          Sluice's event-loop lag p99 under the non-stream load plus a 2 MB one-word body/s
//   memory       RSS of a fresh Sluice and a fresh floor (2 s of non-stream and of stream load
//                first) with 1,000 and then 5,000 streams open
//   scheduling   one simulated replica running 2 at a time (bench/fleet/replica.ts) behind a channel
//                with concurrency 2 against one without (the engine's FIFO): a priority-0 flood of 30
//                and 6 priority-10 calls sent into it; 30 calls of app A and 6 of app B (bench/scheduling.ts)
//   start        fresh Sluices (3, or --start-runs N): spawn to the first /healthz 200, then the
//                first and the second chat request's latency; --start-baseline DIR starts another
//                build (a dist/ folder built from another commit) in turn with this one
//   qpm          only with --long: the budgeted+QPM key held for 120 s (or --qpm-seconds), CPU per
//                request at minute 2 against the first 10 s
//   store        only with --store postgres: stateless and chatId non-stream RPS and CPU/request of
//                the SQLite Sluice against one on PostgreSQL + Redis (bench/shared-store.ts: durable
//                PostgreSQL defaults, Redis without AOF), with the CPU of PostgreSQL's and Redis's
//                processes per request
//   fleet        4 simulated vLLM replicas (bench/fleet/replica.ts, each its own process), 8 agent
//                sessions of 8 turns through a random-routing floor and through Sluice, interleaved,
//                then with one replica 3x slow: TTFT p50/p95, token cache hit ratio, requests per replica;
//                then 10 apps' users (shared prompts, caches smaller than all of them) through the floor,
//                Sluice by prefix and Sluice by session (bench/fleet/shared-prefix.ts); and the cost
//                of one request's prefix routing, 8 channels, a 100K-token prompt (bench/fleet/prefix-cost.ts)
//   batches      4 simulated replicas (8 running each, channel concurrency 8): the fleet's agent sessions
//                alone and with a 2,000-line chat batch (OpenAI SDK) submitted at once, interleaved: TTFT
//                p95 with/without, the batch's lines/s against the idle capacity the sessions leave
//                (bench/fleet/batches.ts); not in a default run
//   workers      only with --store postgres: the same two loads on PostgreSQL + Redis with
//                server.workers 1 against 2, each process's CPU (primary, each worker, upstream,
//                PostgreSQL, Redis, the load generator)
// Cases compared by a ratio run interleaved in rounds (bench/interleave.ts); a ratio is the median
// of its per-round ratios.
//
// Flags (after `npm run bench --`):
//   --seconds N       measured seconds per throughput case (default 10; env BENCH_SECONDS)
//   --rounds N        interleaved rounds they are split into (default 5; env BENCH_ROUNDS)
//   --warmup N        unmeasured warm-up seconds per case (default 3; env BENCH_WARMUP_SECONDS)
//   --only a,b        run only these sections (names above)
//   --long            add the qpm section (120 s); --qpm-seconds N sets its length (≥ 90 s is the issue's)
//   --store postgres  run the store and workers sections instead of the default ones (about 2 min);
//                     --only may name others beside them
//   --streams a,b     open-stream counts of the memory section (default 1000,5000)
//   --profile [case]  instead of the sections: Sluice under one load (non-stream, the default;
//                     chatId; bodies; stream; 200kb; embeddings) for --seconds with node --cpu-prof, then its
//                     top self-time functions and modules; with --store postgres, on PostgreSQL + Redis,
//                     and --workers N there profiles every process (summed); --top N lists N rows
//                     of each table (default 25)
//   --heap-profile [case]  instead of the sections: Sluice under one load with V8's sampling heap
//                     profiler after the warm-up; what reached the old generation (freed by a
//                     major collection, or still alive) by the frames of Sluice's that made it
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { runLoad, type LoadSpec } from "./autocannon-case.js";
import { CHAT_HEADERS, CHAT_PATH, headersFor, EMBEDDINGS_PATH, MESSAGES_PATH, RESPONSES_PATH, chatBody, embeddingsBody, messagesBody, responsesBody } from "./chat-request.js";
import { measureEventLoopLag } from "./event-loop-lag.js";
import { failedUsers, measureFailoverLatency } from "./failover.js";
import { errorMessage, measureGroup, type GroupTiming, type LoadCase, type TargetName } from "./interleave.js";
import { measureLatency } from "./latency.js";
import { measureLongQpm } from "./long-qpm.js";
import { chatIdBody, spec } from "./loads.js";
import { MODELS } from "./models.js";
import { spawnNodeServer, type NodeServer } from "./node-process.js";
import { measureMemory } from "./open-streams.js";
import { bodyCases, floorRuns, perKbCost } from "./per-kb.js";
import { heapProfile, profile, type ProfileFlags } from "./profile-run.js";
import { machineFacts, printReport, type BenchResults } from "./report.js";
import { forkedWorkers, startSharedSluice, startSharedStore, type SharedSluice, type SharedStore } from "./shared-store.js";
import { measureScheduling } from "./scheduling.js";
import { BODIES_KEY, startSluice, type SluiceProcess } from "./sluice-process.js";
import { measureStartUp } from "./start-up.js";
import { measureTracing } from "./tracing.js";
import { measureFleet } from "./fleet/bench.js";
import { measureBatches, BATCHES_DEFAULTS } from "./fleet/batches.js";
import { measurePrefixCost } from "./fleet/prefix-cost.js";
import { measureSharedPrefix } from "./fleet/shared-prefix.js";

const SECTIONS = ["non-stream", "bodies", "stream", "realistic", "per-kb", "failover", "embeddings", "dialects", "tracing", "lag", "memory", "scheduling", "start", "qpm", "store", "workers", "fleet", "batches"] as const;
type Section = (typeof SECTIONS)[number];
/** the sections that need PostgreSQL and Redis: only with --store postgres, and then by default */
const STORE_SECTIONS: readonly Section[] = ["store", "workers"];
const WORKERS = 2;
const REALISTIC_CONNECTIONS = 100;
const MEMORY_WARMUP_SECONDS = 2;
const OUT = ".bench-out";

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: "string", default: process.env.BENCH_SECONDS ?? "10" },
    rounds: { type: "string", default: process.env.BENCH_ROUNDS ?? "5" },
    warmup: { type: "string", default: process.env.BENCH_WARMUP_SECONDS ?? "3" },
    only: { type: "string" },
    long: { type: "boolean", default: false },
    "qpm-seconds": { type: "string" },
    streams: { type: "string", default: "1000,5000" },
    profile: { type: "boolean", default: false },
    "heap-profile": { type: "boolean", default: false },
    top: { type: "string", default: "25" },
    store: { type: "string", default: "sqlite" },
    workers: { type: "string", default: "1" },
    "start-runs": { type: "string", default: "3" },
    "start-baseline": { type: "string" },
  },
});
const timingBase = {
  seconds: Number(flags.seconds),
  rounds: Math.max(1, Math.round(Number(flags.rounds))),
  warmupSeconds: Number(flags.warmup),
};
const qpmSeconds = flags["qpm-seconds"] === undefined ? (flags.long ? 120 : 0) : Number(flags["qpm-seconds"]);

interface Context {
  upstream: NodeServer;
  floor: NodeServer;
  sluice: SluiceProcess;
  /** PostgreSQL, with --store postgres */
  shared?: SharedStore;
  timing: GroupTiming;
}

async function main(): Promise<void> {
  // 1. The upstream and the floor as plain JavaScript, as Sluice runs after `npm run build`.
  await build({ entryPoints: ["bench/upstream-process.ts", "bench/floor-proxy-process.ts", "bench/otlp-sink-process.ts", "bench/heap-sampling.ts"], bundle: true, packages: "external", outdir: OUT, platform: "node", format: "esm", target: "node20", logLevel: "warning" });
  const servers: Array<{ stop(): Promise<void> }> = [];
  const facts = await machineFacts();
  try {
    if (flags.store !== "sqlite" && flags.store !== "postgres") throw new Error(`--store takes sqlite or postgres, not ${flags.store}`);
    const postgres = flags.store === "postgres";
    const upstream = await spawnNodeServer("test upstream", { args: [`${OUT}/upstream-process.js`], readyPath: "/healthz", ready: (s) => s === 200 });
    servers.push(upstream);
    const profiling: ProfileFlags = { ...timingBase, top: Number(flags.top), store: flags.store, workers: Number(flags.workers), outDir: OUT };
    if (flags.profile) return await profile(upstream, positionals[0] ?? "non-stream", profiling);
    if (flags["heap-profile"]) return await heapProfile(upstream, positionals[0] ?? "non-stream", profiling);
    const floor = await startFloor(upstream.url);
    servers.push(floor);
    const sluice = await startSluice(upstream.url);
    servers.push(sluice);

    // 2. Each section chosen, in order; a section's failure is reported, the others still run.
    const defaults = postgres ? STORE_SECTIONS : SECTIONS.filter((s) => !STORE_SECTIONS.includes(s) && (s !== "qpm" || qpmSeconds > 0) && s !== "batches");
    const chosen = flags.only ? (flags.only.split(",") as Section[]) : [...defaults];
    const unknown = chosen.filter((s) => !SECTIONS.includes(s));
    if (unknown.length > 0) throw new Error(`unknown section ${unknown.join(", ")}; the sections are ${SECTIONS.join(", ")}`);
    const needsStore = chosen.filter((s) => STORE_SECTIONS.includes(s));
    if (needsStore.length > 0 && !postgres) throw new Error(`${needsStore.join(" and ")} need --store postgres`);
    const results: BenchResults = { facts, timing: timingBase, groups: {}, latency: [], notes: [], setup: [] };
    const ctx: Context = { upstream, floor, sluice, timing: { ...timingBase, upstreamPid: upstream.pid } };
    if (needsStore.length > 0) {
      const shared = await startSharedStore();
      servers.push({ stop: () => shared.close() }); // the sections stop the Sluices on it
      ctx.shared = shared;
      results.setup.push(shared.description, "Redis: one redis-server per Sluice (no AOF, no snapshots); one PostgreSQL database per Sluice");
    }
    for (const section of chosen) {
      try {
        await SECTION_RUNS[section](ctx, results);
      } catch (err) {
        results.notes.push(`${section}: ${errorMessage(err)}`);
      }
    }
    if (!chosen.includes("qpm") && !postgres) results.notes.push("qpm (budgeted+QPM key held for minutes): not run; add --long");
    results.facts.loadAverageEnd = (await machineFacts()).loadAverageStart;

    printReport(results);
    await writeFile(`${OUT}/last-run.json`, JSON.stringify(results, null, 2));
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

function startFloor(upstreamUrl: string): Promise<NodeServer> {
  return spawnNodeServer("floor proxy", {
    args: [`${OUT}/floor-proxy-process.js`, "--upstream", upstreamUrl, "--key", "bench-channel-key"],
    readyPath: "/healthz",
    ready: (s) => s === 200,
  });
}


/** A Sluice's non-stream load without and with a chatId (a conversation per connection). */
function statelessAndChatId(server: SluiceProcess | SharedSluice, label: string): LoadCase[] {
  const others = "storePids" in server ? server.storePids : undefined;
  return [
    { name: `${label} stateless`, target: "sluice", spec: spec(server.url, chatBody(false)), pid: server.pid, others },
    { name: `${label} chatId`, target: "sluice", spec: spec(server.url, chatIdBody), pid: server.pid, others },
  ];
}

/** The three targets of a throughput case: the upstream alone, the floor and Sluice. */
function targets(ctx: Context, which: TargetName[], name: string, body: string | ((i: number) => string), opts?: Partial<Omit<LoadSpec, "origin" | "body">>): LoadCase[] {
  const server = { direct: ctx.upstream, floor: ctx.floor, sluice: ctx.sluice };
  return which.map((target) => ({ name, target, spec: spec(server[target].url, body, opts), pid: target === "direct" ? undefined : server[target].pid }));
}

/** Latency at one connection of each target, for the sections whose baseline is the upstream alone. */
async function latencies(ctx: Context, results: BenchResults, name: string, body: string, stream: boolean): Promise<void> {
  for (const c of targets(ctx, ["direct", "floor", "sluice"], name, body)) {
    console.error(`latency at one connection: ${c.target} ${name}`);
    const result = await measureLatency({ origin: c.spec.origin, path: CHAT_PATH, headers: CHAT_HEADERS, body: () => body, stream }).catch((err: unknown) => errorMessage(err));
    results.latency.push(typeof result === "string" ? { target: c.target, name, error: result } : { target: c.target, name, result });
  }
}

const SECTION_RUNS: Record<Section, (ctx: Context, results: BenchResults) => Promise<void>> = {
  async batches(ctx, results) {
    results.batches = await measureBatches({ ...BATCHES_DEFAULTS, rounds: ctx.timing.rounds }, ctx.timing.seconds);
  },

  async fleet(_ctx, results) {
    results.fleet = await measureFleet();
    results.sharedPrefix = await measureSharedPrefix();
    results.prefixCost = measurePrefixCost();
  },

  async "non-stream"(ctx, results) {
    const body = chatBody(false);
    const cases = [...targets(ctx, ["direct", "floor", "sluice"], "non-stream", body), ...targets(ctx, ["sluice"], "chatId", chatIdBody)];
    results.groups["non-stream"] = await measureGroup("non-stream", cases, ctx.timing);
    await latencies(ctx, results, "non-stream", body, false);
  },

  // FastGPT's log detail (docs/fastgpt.md#bodies): an app keeping every call's bodies against one keeping none
  async bodies(ctx, results) {
    const body = chatBody(false);
    const cases = [
      ...targets(ctx, ["sluice"], "logBodies off", body),
      ...targets(ctx, ["sluice"], "logBodies all", body, { headers: headersFor(BODIES_KEY) }),
    ];
    results.groups.bodies = await measureGroup("bodies: logBodies off against all, non-stream", cases, ctx.timing);
  },

  async stream(ctx, results) {
    const body = chatBody(true);
    results.groups.stream = await measureGroup("stream (20 chunks)", targets(ctx, ["direct", "floor", "sluice"], "stream", body), ctx.timing);
    await latencies(ctx, results, "stream", body, true);
  },

  async realistic(ctx, results) {
    const body = chatBody(true, { model: MODELS.realistic });
    const cases = targets(ctx, ["floor", "sluice"], "realistic stream", body, { connections: REALISTIC_CONNECTIONS });
    results.groups.realistic = await measureGroup("realistic (100 chunks 2 ms apart, 100 connections)", cases, ctx.timing);
  },

  async "per-kb"(ctx, results) {
    const bodies = bodyCases();
    const cases = bodies.flatMap((b) => targets(ctx, floorRuns(b) ? ["floor", "sluice"] : ["sluice"], b.name, b.body));
    // CPU per request is steadier than RPS: shorter slices do
    const timing = { ...ctx.timing, seconds: ctx.timing.seconds / 2, rounds: Math.ceil(ctx.timing.rounds / 2), warmupSeconds: Math.min(1, ctx.timing.warmupSeconds) };
    results.groups["per-kb"] = await measureGroup("per-KB cost", cases, timing);
    results.perKb = perKbCost(results.groups["per-kb"], bodies);
  },

  async failover(ctx, results) {
    const cases = [
      ...targets(ctx, ["sluice"], "2 healthy channels", chatBody(false, { model: MODELS.pair })),
      ...targets(ctx, ["sluice"], "1 of 2 failing 20 %", chatBody(false, { model: MODELS.flaky })),
    ];
    await failedUsers(ctx.upstream.url); // forget failures from before
    results.groups.failover = await measureGroup("failover", cases, ctx.timing);
    results.failoversUnderLoad = (await failedUsers(ctx.upstream.url)).length;
    console.error("failover: latency at one connection, failed-over requests against the others");
    results.failover = await measureFailoverLatency(ctx.sluice.url, ctx.upstream.url);
  },

  async embeddings(ctx, results) {
    if (ctx.sluice.embeddings !== true) {
      results.notes.push(`embeddings: skipped, this build's config does not take vectorModels yet (check-config: ${ctx.sluice.embeddings})`);
      return;
    }
    const body = embeddingsBody();
    const probe = await fetch(ctx.sluice.url + EMBEDDINGS_PATH, { method: "POST", headers: CHAT_HEADERS, body });
    await probe.arrayBuffer();
    if (probe.status === 404 || probe.status === 405) {
      results.notes.push(`embeddings: skipped, Sluice has no POST ${EMBEDDINGS_PATH} yet (answered ${probe.status})`);
      return;
    }
    const cases = targets(ctx, ["floor", "sluice"], "embeddings 16x200 tokens", body, { path: EMBEDDINGS_PATH });
    results.groups.embeddings = await measureGroup("embeddings", cases, ctx.timing);
  },

  async dialects(ctx, results) {
    const cases = [
      ...targets(ctx, ["sluice"], "chat stream", chatBody(true)),
      ...targets(ctx, ["sluice"], "messages stream", messagesBody(), { path: MESSAGES_PATH }),
      ...targets(ctx, ["sluice"], "responses stream", responsesBody(), { path: RESPONSES_PATH }),
    ];
    results.groups.dialects = await measureGroup("dialects (20-chunk streams)", cases, ctx.timing);
  },

  async tracing(ctx, results) {
    const { cases, result } = await measureTracing(ctx.upstream.url, ctx.timing, OUT);
    results.groups.tracing = cases;
    results.tracing = result;
  },

  async lag(ctx, results) {
    console.error(`event-loop lag: ${ctx.timing.seconds} s of non-stream load plus a 2 MB one-word body each second`);
    results.lag = await measureEventLoopLag(ctx.sluice.url, ctx.timing.seconds, ctx.sluice.pid);
  },

  async memory(ctx, results) {
    // Fresh processes, so that the heap grown by the other sections' large bodies is not counted;
    // a little load first, so that what a serving process always holds is.
    const sluice = await startSluice(ctx.upstream.url);
    const floor = await startFloor(ctx.upstream.url).catch(async (err: unknown) => {
      await sluice.stop();
      throw err;
    });
    try {
      for (const server of [sluice, floor]) {
        for (const stream of [false, true]) await runLoad(spec(server.url, chatBody(stream)), MEMORY_WARMUP_SECONDS);
      }
      const counts = flags.streams.split(",").map(Number);
      results.memory = await measureMemory(
        [
          { target: "sluice", origin: sluice.url, pid: sluice.pid },
          { target: "floor", origin: floor.url, pid: floor.pid },
        ],
        counts,
      );
    } finally {
      await Promise.all([sluice.stop(), floor.stop()]);
    }
  },

  async store(ctx, results) {
    const shared = await startSharedSluice(ctx.upstream.url, ctx.shared!, 1);
    try {
      const cases = [...statelessAndChatId(ctx.sluice, "SQLite"), ...statelessAndChatId(shared, "PostgreSQL+Redis")];
      results.groups.store = await measureGroup("store: SQLite against PostgreSQL + Redis, non-stream", cases, ctx.timing);
    } finally {
      await shared.stop();
    }
  },

  async workers(ctx, results) {
    const one = await startSharedSluice(ctx.upstream.url, ctx.shared!, 1);
    try {
      const many = await startSharedSluice(ctx.upstream.url, ctx.shared!, WORKERS);
      try {
        const forked = await forkedWorkers(many.pid, WORKERS);
        if (forked < WORKERS) {
          results.notes.push(`workers: not run, this build serves server.workers: ${WORKERS} with ${forked} worker processes (node:cluster not in it yet?)`);
          return;
        }
        const cases = [...statelessAndChatId(one, "1 worker"), ...statelessAndChatId(many, `${WORKERS} workers`)];
        results.groups.workers = await measureGroup(`workers: 1 against ${WORKERS} on PostgreSQL + Redis, non-stream`, cases, ctx.timing);
      } finally {
        await many.stop();
      }
    } finally {
      await one.stop();
    }
  },

  async scheduling(_ctx, results) {
    results.scheduling = await measureScheduling();
  },

  async start(ctx, results) {
    results.startUp = await measureStartUp(ctx.upstream.url, Math.max(1, Math.round(Number(flags["start-runs"]))), flags["start-baseline"]);
  },
  async qpm(ctx, results) {
    console.error(`qpm: the budgeted+QPM key for ${qpmSeconds} s`);
    results.qpm = await measureLongQpm(ctx.sluice.url, { target: ctx.sluice.pid, upstream: ctx.upstream.pid }, qpmSeconds || 120, Math.max(3, ctx.timing.warmupSeconds));
  },
};

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
