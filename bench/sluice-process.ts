// Sluice as the benchmark runs it: its own process (the built dist/main.js, as `npm start` runs it),
// a temporary config and SQLite store (or PostgreSQL and Redis) pointing at the test upstream, with
// everything a paying operator turns on: prices (points metered on every request), a budget and a
// QPM limit on the app and on the key (both far above what the bench sends, so nothing is refused),
// usage rows, and the request log at level info on stdout, which goes to a file as a container's
// log would.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FLAKY_PREFIX, MODELS } from "./models.js";
import { spawnNodeServer, type NodeServer } from "./node-process.js";

export const BENCH_KEY = "sk-bench-key-123456";
/** The key of the budgeted+QPM case: an app and a key of its own, so their windows start empty. */
export const METERED_KEY = "sk-bench-metered-123456";
/** The key of an app that keeps every call's bodies for FastGPT's log detail (apps[].logBodies "all"). */
export const BODIES_KEY = "sk-bench-bodies-123456";
const CHANNEL_KEY = "bench-channel-key";
const NO_REFUSAL_QPM = 100_000_000;
const NO_REFUSAL_POINTS = 1e12;

export interface SluiceProcess extends NodeServer {
  /** Whether this build accepted `vectorModels` (the embeddings case needs it). */
  embeddings: boolean | string;
  logFile: string;
}

export interface SluiceOptions {
  /** Extra arguments for node itself, e.g. `--cpu-prof`. */
  nodeArgs?: string[];
  /** PostgreSQL and Redis instead of the SQLite file and the in-process counters. */
  shared?: { postgresUrl: string; redisUrl: string };
  /** `server.workers` (node:cluster processes; needs `shared`) */
  workers?: number;
  /** how often /healthz is polled until it answers (default 200 ms) */
  pollMs?: number;
  /** the build to run: a dist/ folder (default this checkout's) */
  dist?: string;
  /** the config's `tracing` block (docs/tracing.md#config); none when absent */
  tracing?: Record<string, unknown>;
}

export async function startSluice(upstreamUrl: string, opts: SluiceOptions = {}): Promise<SluiceProcess> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-bench-"));
  const configPath = join(dir, "config.json");
  const logFile = join(dir, "sluice.log");
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    // Embeddings only when this build knows `vectorModels`, the bodies app only when it knows
    // `logBodies` (an older build's: bench/compare.ts, --start-baseline): checked offline by its own CLI
    const dist = (file: string) => join(opts.dist ?? "dist", file);
    const config = (withEmbeddings: boolean, withBodies: boolean) => JSON.stringify(benchConfig(upstreamUrl, join(dir, "bench.db"), withEmbeddings, withBodies, opts), null, 2);
    let check: true | string = "no config was accepted";
    for (const [embeddings, bodies] of [[true, true], [true, false], [false, true], [false, false]] as const) {
      await writeFile(configPath, config(embeddings, bodies));
      const said = await checkConfig(dist("cli.js"), configPath);
      if (embeddings && said !== true) check = said; // why this build takes no embeddings, if it does not
      if (said !== true) continue;
      if (embeddings) check = true;
      break;
    }
    const sluice = await spawnNodeServer("Sluice", {
      args: [...(opts.nodeArgs ?? []), dist("main.js"), "--config", configPath],
      readyPath: "/healthz",
      ready: (status) => status === 200,
      pollMs: opts.pollMs,
      outputFile: logFile,
    });
    return { ...sluice, embeddings: check, logFile, stop: () => sluice.stop().finally(remove) };
  } catch (err) {
    await remove();
    throw err;
  }
}

/** true, or the first line of what `sluice check-config` said against the config. */
function checkConfig(cli: string, path: string): Promise<true | string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, "check-config", path], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d));
    child.stderr.on("data", (d: Buffer) => (output += d));
    child.on("error", (err) => resolve(err.message));
    child.on("close", (code) => resolve(code === 0 ? true : output.trim().split("\n").slice(0, 2).join(" ") || `exit ${code}`));
  });
}

function benchConfig(upstreamUrl: string, dbPath: string, withEmbeddings: boolean, withBodies: boolean, opts: SluiceOptions) {
  const priced = { inputPrice: 0.001, outputPrice: 0.002 };
  const chatModels = [MODELS.chat, MODELS.realistic, MODELS.hold, MODELS.pair, MODELS.flaky];
  const channel = (name: string, models: string[], baseUrl = upstreamUrl) => ({ name, baseUrl, key: CHANNEL_KEY, models });
  const appModels = [...chatModels, MODELS.large, ...(withEmbeddings ? [MODELS.embed] : [])];
  const limits = { qpm: NO_REFUSAL_QPM, maxUsagePoints: NO_REFUSAL_POINTS };
  return {
    server: { log: { level: "info" }, shutdownTimeoutMs: 2_000, ...(opts.workers === undefined ? {} : { workers: opts.workers }) },
    store: opts.shared ? { driver: "postgres", url: opts.shared.postgresUrl } : { driver: "sqlite", path: dbPath },
    ...(opts.shared ? { cluster: { redisUrl: opts.shared.redisUrl } } : {}),
    ...(opts.tracing ? { tracing: opts.tracing } : {}),
    channels: [
      // enough pooled upstream connections for the 5,000 open streams of the memory case
      { ...channel("bench", [MODELS.chat, MODELS.realistic, MODELS.hold, MODELS.large, ...(withEmbeddings ? [MODELS.embed] : [])]), connections: 5_200 },
      channel("pair-1", [MODELS.pair]),
      channel("pair-2", [MODELS.pair]),
      channel("steady", [MODELS.flaky]),
      // A channel that failed is tried after the others until a health check finds it up: checked
      // every 50 ms it comes back (and fails again) often enough for its failovers to be timed.
      { ...channel("flaky", [MODELS.flaky], upstreamUrl + FLAKY_PREFIX), healthCheck: { intervalMs: 50 } },
    ],
    llmModels: [
      ...chatModels.map((model) => ({ model, maxContext: 32_000, maxResponse: 2_000, ...priced })),
      { model: MODELS.large, maxContext: 262_144, maxResponse: 4_000, ...priced },
    ],
    ...(withEmbeddings ? { vectorModels: [{ model: MODELS.embed, maxToken: 3_000, inputPrice: priced.inputPrice }] } : {}),
    apps: [
      { id: "bench", model: MODELS.chat, models: appModels, history: 6, ...limits },
      { id: "bench-metered", model: MODELS.chat, models: appModels, history: 6, ...limits },
      ...(withBodies ? [{ id: "bench-bodies", model: MODELS.chat, models: appModels, history: 6, ...limits, logBodies: "all" }] : []),
    ],
    apiKeys: [
      { name: "bench", kind: "app", appId: "bench", key: BENCH_KEY, ...limits },
      { name: "bench-metered", kind: "app", appId: "bench-metered", key: METERED_KEY, ...limits },
      ...(withBodies ? [{ name: "bench-bodies", kind: "app", appId: "bench-bodies", key: BODIES_KEY, ...limits }] : []),
    ],
  };
}
