// Sluice as the benchmark runs it: its own process, a temporary config and SQLite store pointing
// at the test upstream, logging off.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnNodeServer, type NodeServer } from "./node-process.js";

export const BENCH_MODEL = "bench-model";
export const BENCH_KEY = "sk-bench-key-123456";

export async function startSluice(upstreamUrl: string): Promise<NodeServer> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-bench-"));
  const configPath = join(dir, "config.json");
  await writeFile(configPath, JSON.stringify(benchConfig(upstreamUrl, join(dir, "bench.db")), null, 2));
  try {
    const sluice = await spawnNodeServer("Sluice", {
      // what `npm start` runs: the transpiled gateway (`npm run bench` builds it first)
      args: ["dist/main.js", "--config", configPath],
      readyPath: "/healthz",
      ready: (status) => status === 200,
    });
    return { ...sluice, stop: () => sluice.stop().finally(() => rm(dir, { recursive: true, force: true })) };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

function benchConfig(upstreamUrl: string, dbPath: string) {
  return {
    server: { log: { level: "silent" } },
    store: { driver: "sqlite", path: dbPath },
    // Enough pooled upstream connections for the 1,000 concurrent streams of the memory case.
    channels: [{ name: "bench", baseUrl: upstreamUrl, key: "bench-channel-key", models: [BENCH_MODEL], connections: 1100 }],
    llmModels: [{ model: BENCH_MODEL, name: "Bench", maxContext: 32000, maxResponse: 2000 }],
    apps: [{ id: "bench", model: BENCH_MODEL, history: 6 }],
    apiKeys: [{ name: "bench", kind: "app", appId: "bench", key: BENCH_KEY }],
  };
}
