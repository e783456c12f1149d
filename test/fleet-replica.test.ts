// The fleet simulator (bench/fleet/replica.ts) behaves as vLLM does where routing can see it: a
// prompt's blocks are cached and the next prompt with that prefix reports them as cached tokens;
// the cache evicts least recently used blocks past its capacity; at most max-running sequences
// run while the rest wait (in /metrics); priority orders the queue only under the priority policy.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReplica, type Replica } from "../bench/fleet/replicas.js";

interface Answer {
  usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

function chat(r: Replica, system: string, extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${r.url}/v1/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ model: "sim", max_tokens: 2, messages: [{ role: "system", content: system }, { role: "user", content: "hi" }], ...extra }),
  });
}
const usageOf = async (res: Response) => ((await res.json()) as Answer).usage;
const metric = async (r: Replica, name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m").exec(await (await fetch(`${r.url}/metrics`)).text())?.[1]);

describe("fleet simulator replica", () => {
  let fast: Replica;
  let queued: Replica;
  beforeAll(async () => {
    [fast, queued] = await Promise.all([
      startReplica({ name: "cache", cacheBlocks: 200, decodeMsPerToken: 1, prefillUsPerToken: 1 }),
      startReplica({ name: "queue", maxRunning: 1, decodeMsPerToken: 50, schedulingPolicy: "priority" }),
    ]);
  });
  afterAll(() => Promise.all([fast?.stop(), queued?.stop()]));

  it("reports a cached prefix as cached tokens, in whole blocks, and evicts the least recently used past its capacity", async () => {
    const a = "a".repeat(4 * 16 * 60); // 60 blocks of 16 tokens
    expect((await usageOf(await chat(fast, a))).prompt_tokens_details.cached_tokens).toBe(0);
    const again = await usageOf(await chat(fast, a));
    expect(again.prompt_tokens_details.cached_tokens).toBe(Math.floor((again.prompt_tokens - 1) / 16) * 16);
    // another prefix shares nothing; three more of 60 blocks push the first out of a 200-block cache
    expect((await usageOf(await chat(fast, "b".repeat(a.length)))).prompt_tokens_details.cached_tokens).toBe(0);
    for (const c of ["c", "d", "e"]) await usageOf(await chat(fast, c.repeat(a.length)));
    expect((await usageOf(await chat(fast, a))).prompt_tokens_details.cached_tokens).toBe(0);
    const stats = await fast.stats();
    expect(stats).toMatchObject({ name: "cache", requests: 7, running: 0, waiting: 0 });
    expect(stats.cachedTokens).toBe(again.prompt_tokens_details.cached_tokens);
    expect(await metric(fast, "vllm:prefix_cache_hits_total")).toBe(stats.cachedTokens);
  });

  it("runs at most max-running sequences, queues the rest (lower priority first) and shows both in /metrics", async () => {
    const order: string[] = [];
    const send = (name: string, priority: number) => chat(queued, name, { priority, max_tokens: 3 }).then(async (res) => (await res.json(), order.push(name)));
    const first = send("first", 0);
    while ((await metric(queued, "vllm:num_requests_running")) < 1) await new Promise((r) => setImmediate(r));
    const rest = [send("late", 5), send("urgent", -5)];
    while ((await metric(queued, "vllm:num_requests_waiting")) < 2) await new Promise((r) => setImmediate(r));
    expect(await metric(queued, "vllm:num_requests_running")).toBe(1);
    expect(await metric(queued, "vllm:kv_cache_usage_perc")).toBeGreaterThan(0);
    await Promise.all([first, ...rest]);
    expect(order).toEqual(["first", "urgent", "late"]);
  });

  it("refuses a priority unless started with the priority policy, as vLLM does", async () => {
    const res = await chat(fast, "x", { priority: 1 });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ object: "error", message: "Priority scheduling is not enabled." });
  });

  it("streams its answer with a usage chunk carrying cached tokens", async () => {
    const body = await (await chat(fast, "s".repeat(400), { stream: true, stream_options: { include_usage: true } })).text();
    expect(body).toContain(`"delta":{"role":"assistant","content":" the"}`);
    expect(body).toMatch(/"usage":\{"prompt_tokens":\d+,"completion_tokens":2,"total_tokens":\d+,"prompt_tokens_details":\{"cached_tokens":0\}\}/);
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
  });
});
