// A gateway process killed (SIGKILL) mid-batch loses nothing and runs no line twice to completion
// (docs/batches.md#durability): after a restart on the same SQLite file the batch completes with one
// output and one usage row per line; only lines cut mid-call were called again.
import { writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMainProcesses, SOURCE_ENTRY } from "./support/main-process.js";
import { useTempDir } from "./support/fixtures.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-batches-restart-0001";
const LINES = 50;
let upstream: Upstream;
const tmp = useTempDir("sluice-batches-restart-");
const processes = createMainProcesses();

beforeAll(async () => {
  upstream = await startUpstream({ firstByteDelayMs: 40 });
});
afterAll(async () => {
  await processes.killAll();
  await upstream.close();
});

describe("a gateway killed mid-batch", () => {
  it("completes the batch after a restart with every line's output and usage row exactly once", async () => {
    const db = tmp.file("sluice.db");
    const config = tmp.file("config.json");
    writeFileSync(
      config,
      JSON.stringify({
        server: { log: { level: "warn", destination: "stdout" } },
        store: { driver: "sqlite", path: db },
        channels: [{ name: "chat", baseUrl: upstream.url, models: ["m"], healthCheck: { intervalMs: 0 } }],
        llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500, charsPointsPrice: 1 }],
        apps: [{ id: "a", model: "m", maxUsagePoints: -1 }],
        apiKeys: [{ name: "ka", kind: "app", appId: "a", key: KEY }],
        batches: { leaseMs: 1000, concurrency: 4, perChannel: 4 },
      }),
    );
    const start = () => processes.startMain(SOURCE_ENTRY, ["--config", config]);
    const first = await start();
    const client = (url: string) => new OpenAI({ apiKey: KEY, baseURL: `${url}/v1`, maxRetries: 0 });
    const lines = Array.from({ length: LINES }, (_, i) => JSON.stringify({ custom_id: `l-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "m", messages: [{ role: "user", content: `q-${i}` }] } }));
    const file = await client(first.url).files.create({ file: await toFile(Buffer.from(lines.join("\n")), "in.jsonl"), purpose: "batch" });
    const batch = await client(first.url).batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    const deadline = Date.now() + 30_000;
    while (upstream.requests.length < 14 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    first.proc.kill("SIGKILL");
    await first.exited;
    const calledBefore = upstream.requests.length;
    expect(calledBefore).toBeLessThan(LINES);

    const second = await start();
    let done = await client(second.url).batches.retrieve(batch.id);
    while (done.status !== "completed" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      done = await client(second.url).batches.retrieve(batch.id);
    }
    expect(done.status).toBe("completed");
    expect(done.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const out = (await (await client(second.url).files.content(done.output_file_id!)).text()).trim().split("\n").map((l) => JSON.parse(l) as { custom_id: string });
    expect(out.map((l) => l.custom_id).sort()).toEqual(Array.from({ length: LINES }, (_, i) => `l-${i}`).sort());
    // at most the lines running at the kill (concurrency 4) were called twice
    expect(upstream.requests.length - LINES).toBeLessThanOrEqual(4);
    second.proc.kill("SIGTERM");
    await second.exited;
    const read = new Database(db, { readonly: true });
    try {
      const rows = read.prepare(`SELECT COUNT(*) AS n FROM usage WHERE endpoint = '/v1/chat/completions' AND status = 200`).get() as { n: number };
      expect(rows.n).toBe(LINES);
    } finally {
      read.close();
    }
  }, 60_000);
});
