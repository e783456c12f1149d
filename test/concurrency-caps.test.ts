// maxConcurrent (docs/routing.md#priority-and-fairness): an app's, a key's and a share link user's calls in
// flight at once, on one instance and across instances sharing Redis; one more is 429 concurrency_limit
// with Retry-After: 1; a slot is freed on every ending (answer, cut, client abort, deadline), and the slots
// of an instance killed mid-call free themselves within cluster.slotTtlMs. Over real sockets: gateways in
// front of a scripted model server that holds calls until the test lets them go.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createRedisClusterState } from "../src/cluster/redis.js";
import { userMessage } from "./support/core-config.js";
import { expectError } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { BUILT_ENTRY, createMainProcesses } from "./support/main-process.js";
import { useRedis } from "./support/redis.js";
import { startScriptedUpstream, textChunks, type ModelTurn, type ScriptedUpstream } from "./support/scripted-upstream.js";

const KEY = "sk-caps-key-0001";
const KEY2 = "sk-caps-key-0002";
const CAPPED_KEY = "sk-caps-capped-0001";

let upstream: ScriptedUpstream;
let release = () => {};
let held = new Promise<void>((resolve) => (release = resolve));
/** calls the model server holds right now */
let holding = 0;
let mostHolding = 0;

const answer: ModelTurn = { chunks: textChunks("fine", 2), finishReason: "stop", usage: { prompt_tokens: 3, completion_tokens: 2 } };

beforeAll(async () => {
  // "hold": answered once the test lets go; "hold-stream": one chunk, then the rest once let go;
  // "cut": the connection cut after one chunk; anything else: answered at once
  upstream = await startScriptedUpstream(async (req) => {
    const marker = String(req.body.messages.at(-1)?.content);
    if (marker === "cut") return { ...answer, cutAfter: 1 };
    if (marker === "hold-stream") return { ...answer, holdAfterFirst: held };
    if (marker !== "hold") return answer;
    mostHolding = Math.max(mostHolding, ++holding);
    await held;
    holding--;
    return answer;
  });
});
afterAll(() => upstream.close());

const gateways: StartedGateway[] = [];
afterEach(async () => {
  release();
  await Promise.all(gateways.splice(0).map((g) => g.close()));
  held = new Promise<void>((resolve) => (release = resolve));
  mostHolding = holding = 0;
});

/** App `capped` allows 5 calls at once; key `capped` of app `open` allows 1; the link allows 1 per user. */
function config(extra: Record<string, unknown> = {}, channel: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    channels: [{ name: "up", baseUrl: upstream.url, models: ["m1"], healthCheck: { intervalMs: 0 }, ...channel }],
    llmModels: [{ model: "m1", maxContext: 4000, maxResponse: 100 }],
    apps: [
      { id: "capped", model: "m1", maxConcurrent: 5 },
      { id: "open", model: "m1" },
    ],
    apiKeys: [
      { name: "k1", kind: "app", appId: "capped", key: KEY },
      { name: "k2", kind: "app", appId: "capped", key: KEY2 },
      { name: "one-at-a-time", kind: "app", appId: "open", key: CAPPED_KEY, maxConcurrent: 1 },
    ],
    shareLinks: [{ shareId: "public", appId: "open", maxConcurrent: 1 }],
    ...extra,
  };
}

async function gateway(raw: Record<string, unknown>): Promise<StartedGateway> {
  const gw = await startGateway(raw);
  gateways.push(gw);
  return gw;
}

const ask = (url: string, key: string | null, marker: string, more: Record<string, unknown> = {}, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ model: "m1", messages: [userMessage(marker)], ...more }),
    signal,
  });

/** `count` calls at once spread over `urls`, held by the model server once admitted; resolves once
 *  every refusal is in and `cap` calls are held (each refusal checked). */
async function flood(urls: string[], key: string, count: number, cap: number): Promise<void> {
  const refused: Response[] = [];
  for (let i = 0; i < count; i++) void ask(urls[i % urls.length]!, key, "hold").then((res) => res.status === 429 && refused.push(res));
  await vi.waitFor(() => expect([refused.length, holding]).toEqual([count - cap, cap]), { timeout: 20_000, interval: 20 });
  for (const res of refused) {
    expect(res.headers.get("retry-after")).toBe("1");
    await expectError(res, 429, "concurrency_limit");
  }
}

/** A call that must get through (polled while the slot it needs is still being freed). */
async function eventuallyAdmitted(url: string, key: string | null, more: Record<string, unknown> = {}): Promise<void> {
  await vi.waitFor(
    async () => {
      const res = await ask(url, key, "quick", more);
      await res.text();
      expect(res.status).toBe(200);
    },
    { timeout: 5_000, interval: 20 },
  );
}

describe("maxConcurrent on one instance", () => {
  it("admits exactly the app's cap of 100 calls at once, across its keys; the rest get 429 concurrency_limit with Retry-After: 1", async () => {
    const gw = await gateway(config());
    const calls = Array.from({ length: 100 }, (_, i) => ask(gw.url, i % 2 ? KEY : KEY2, "hold"));
    const statuses: number[] = [];
    const done = calls.map((c) => c.then(async (res) => (statuses.push(res.status), res)));
    await vi.waitFor(() => expect([statuses.length, holding]).toEqual([95, 5]), { timeout: 20_000, interval: 20 });
    expect(statuses.every((s) => s === 429)).toBe(true);
    const refused = await Promise.race(done.map((d) => d.then((res) => (res.status === 429 ? res : new Promise<Response>(() => {})))));
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await expectError(refused, 429, "concurrency_limit")).toMatchObject({ type: "rate_limit_error", message: "App capped allows 5 calls at once; retry when one has finished." });
    release();
    const all = await Promise.all(done);
    expect(all.filter((r) => r.status === 200)).toHaveLength(5);
    expect(mostHolding).toBe(5);
    // answered: the slots are free again
    await eventuallyAdmitted(gw.url, KEY);
  });

  it("frees a key's slot when the answer is cut by the model server", async () => {
    const gw = await gateway(config());
    const res = await ask(gw.url, CAPPED_KEY, "cut", { stream: true });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("error");
    await eventuallyAdmitted(gw.url, CAPPED_KEY);
  });

  it("frees a key's slot when the client goes away mid-stream", async () => {
    const gw = await gateway(config());
    const abort = new AbortController();
    const res = await ask(gw.url, CAPPED_KEY, "hold-stream", { stream: true }, abort.signal);
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk: the call is in flight
    const second = await ask(gw.url, CAPPED_KEY, "quick");
    await expectError(second, 429, "concurrency_limit");
    abort.abort();
    await eventuallyAdmitted(gw.url, CAPPED_KEY);
  });

  it("frees a key's slot when the call passes its channel's totalTimeoutMs", async () => {
    const gw = await gateway(config({}, { totalTimeoutMs: 300 }));
    const res = await ask(gw.url, CAPPED_KEY, "hold");
    await expectError(res, 504, "upstream_timeout");
    await eventuallyAdmitted(gw.url, CAPPED_KEY);
  });

  it("caps a share link per user: one user's second call is refused in words for the public, another user's is served", async () => {
    const gw = await gateway(config());
    const share = (uid: string, marker: string) => ask(gw.url, null, marker, { shareId: "public", outLinkUid: uid });
    const first = share("user-a", "hold");
    await vi.waitFor(() => expect(holding).toBe(1), { timeout: 5_000, interval: 10 });
    const again = await share("user-a", "quick");
    const error = await expectError(again, 429, "concurrency_limit");
    expect(error.message).not.toMatch(/\d|open/);
    const other = await share("user-b", "quick");
    expect(other.status).toBe(200);
    await other.text();
    release();
    expect((await first).status).toBe(200);
  });
});

describe("maxConcurrent across instances (Redis)", () => {
  const redis = useRedis();
  const processes = createMainProcesses();
  afterAll(() => processes.killAll());

  it("admits exactly the app's cap of 100 calls sent through two gateways at once", async () => {
    const raw = config({ cluster: { redisUrl: redis.server().url } });
    const [a, b] = [await gateway(raw), await gateway(raw)];
    await flood([a.url, b.url], KEY, 100, 5);
    release();
    expect(mostHolding).toBe(5);
    await eventuallyAdmitted(a.url, KEY);
    await eventuallyAdmitted(b.url, KEY);
  });

  it("writes a live call's slot again into a Redis that restarted empty", async () => {
    const state = createRedisClusterState({ url: redis.server().url, prefix: "restart:", breaker: { failures: 3, cooldownMs: 30_000 }, log: () => {}, slotTtlMs: 600 });
    const raw = new Redis(redis.server().url, { lazyConnect: true });
    try {
      await vi.waitFor(() => state.ping(), { timeout: 5_000, interval: 20 });
      expect(await state.takeSlots([{ scope: "key:web", max: 1 }], "1", Date.now())).toEqual({ ok: true });
      await redis.server().stop();
      await redis.server().start();
      await raw.connect();
      // the renewal (every third of the TTL) puts it back once this instance is connected again
      await vi.waitFor(async () => expect(await raw.zcard("sluice:restart:slots:key:web")).toBe(1), { timeout: 10_000, interval: 50 });
      expect(await state.takeSlots([{ scope: "key:web", max: 1 }], "2", Date.now())).toEqual({ ok: false, scope: "key:web" });
      await state.freeSlots(["key:web"], "1");
      expect(await raw.zcard("sluice:restart:slots:key:web")).toBe(0);
    } finally {
      raw.disconnect();
      await state.close();
    }
  });

  it("frees the slots of a gateway killed mid-call within cluster.slotTtlMs", async () => {
    const ttl = 1_000;
    const raw = config({ cluster: { redisUrl: redis.server().url, slotTtlMs: ttl } });
    const dir = mkdtempSync(join(tmpdir(), "sluice-caps-"));
    try {
      writeFileSync(join(dir, "config.json"), JSON.stringify({ ...raw, server: { log: { level: "silent" } }, store: { driver: "memory" } }));
      const killed = await processes.startMain(BUILT_ENTRY, ["--config", join(dir, "config.json")]);
      const survivor = await gateway(raw);
      const call = ask(killed.url, CAPPED_KEY, "hold").catch(() => undefined);
      await vi.waitFor(() => expect(holding).toBe(1), { timeout: 5_000, interval: 10 });
      const takenAt = Date.now();
      // while the gateway lives, the slot of its call is renewed: kept well past the TTL
      while (Date.now() - takenAt < 2 * ttl) await expectError(await ask(survivor.url, CAPPED_KEY, "quick"), 429, "concurrency_limit");
      killed.proc.kill("SIGKILL");
      await killed.exited;
      const killedAt = Date.now();
      await call;
      await eventuallyAdmitted(survivor.url, CAPPED_KEY);
      // the TTL, plus the polling and a loaded machine's slack
      expect(Date.now() - killedAt).toBeLessThan(ttl + 3_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
