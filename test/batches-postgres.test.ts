// Batches on PostgreSQL shared by two instances (docs/batches.md#durability): one batch's lines are
// claimed by both (FOR UPDATE SKIP LOCKED), none twice; an instance that stops mid-run has its claims
// taken over once their lease lapses, and the batch completes with one output per line. Budgets and
// rates are shared through Redis, as with several instances in production.
import OpenAI, { toFile } from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { createStore } from "../src/store/index.js";
import type { Store } from "../src/store/types.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { usePostgres } from "./support/postgres.js";
import { useRedis } from "./support/redis.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-batches-pg-app-0001";
const postgres = usePostgres();
const redis = useRedis();
const closing: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closing.reverse()) await close().catch(() => {});
});

async function instance(url: string, upstream: Upstream): Promise<{ gw: StartedGateway; store: Store }> {
  const store = createStore({ driver: "postgres", url });
  const gw = await startGateway(
    {
      channels: [{ name: "chat", baseUrl: upstream.url, models: ["m"], healthCheck: { intervalMs: 0 } }],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500, charsPointsPrice: 1 }],
      apps: [{ id: "a", model: "m", maxUsagePoints: -1 }],
      apiKeys: [{ name: "ka", kind: "app", appId: "a", key: KEY }],
      batches: { leaseMs: 1000, perChannel: 3, concurrency: 3 },
      cluster: { redisUrl: redis.server().url },
    },
    { store },
  );
  closing.push(() => store.close(), () => gw.close());
  return { gw, store };
}

/** the lines an instance answered, from its /metrics */
async function doneLines(gw: StartedGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith('sluice_batch_lines_total{endpoint="/v1/chat/completions",outcome="done"}'));
  return Number(line?.split(" ").at(-1) ?? 0);
}

describe("batches on PostgreSQL with two instances", () => {
  it("shares one batch, runs no line twice, and takes over the claims of an instance that stopped", async () => {
    const url = await postgres.createDatabase();
    const upstream = await startUpstream({ firstByteDelayMs: 30 });
    closing.push(() => upstream.close());
    const a = await instance(url, upstream);
    const b = await instance(url, upstream);
    const client = (gw: StartedGateway) => new OpenAI({ apiKey: KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const lines = Array.from({ length: 60 }, (_, i) => ({ custom_id: `l-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "m", messages: [{ role: "user", content: `q-${i}` }] } }));
    const file = await client(a.gw).files.create({ file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join("\n")), "in.jsonl"), purpose: "batch" });
    const batch = await client(b.gw).batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    // both instances run lines; A stops once it ran a few: its claims lapse and B finishes them
    const deadline = Date.now() + 20_000;
    while ((await doneLines(a.gw)) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await a.gw.close();
    let done = await client(b.gw).batches.retrieve(batch.id);
    while (done.status !== "completed" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      done = await client(b.gw).batches.retrieve(batch.id);
    }
    expect(done.status).toBe("completed");
    expect(await doneLines(b.gw)).toBeGreaterThan(0);
    expect(done.request_counts).toEqual({ total: 60, completed: 60, failed: 0 });
    const out = (await (await client(b.gw).files.content(done.output_file_id!)).text()).trim().split("\n").map((l) => JSON.parse(l) as { custom_id: string });
    expect(out.map((l) => l.custom_id).sort()).toEqual(lines.map((l) => l.custom_id).sort());
    // each line was called once, except those cut when A stopped (called again by B)
    const calls = new Map<string, number>();
    for (const r of upstream.requests) {
      const q = String(r.body.messages.at(-1)?.content);
      calls.set(q, (calls.get(q) ?? 0) + 1);
    }
    expect(calls.size).toBe(60);
    expect([...calls.values()].filter((n) => n > 1).length).toBeLessThanOrEqual(3);
  }, 60_000);
});
