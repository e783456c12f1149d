// Failover and circuit breaking over real sockets (docs/api.md#upstream-failures,
// docs/configuration.md#routing): channels tried by priority and weight before the first byte, never after
// it; breakers open, probe and close; all open → 503 at once; health checks tell sluice_channel_up the
// truth.
import { createServer } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { APP_KEY, chat, userMessage } from "./support/core-config.js";
import { parseSse } from "./support/sse.js";

let a: Upstream;
let b: Upstream;
let gw: StartedGateway | undefined;

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function config(channels: Record<string, unknown>[], routing: Record<string, unknown> = {}) {
  return {
    channels: channels.map((c) => ({ models: ["m"], healthCheck: { intervalMs: 0 }, ...c })),
    llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
    apps: [{ id: "app", model: "m" }],
    apiKeys: [{ name: "k", kind: "app", appId: "app", key: APP_KEY }],
    routing,
  };
}

const ask = async (stream = false) => {
  const res = await chat(gw!.url, { messages: [userMessage("hi")], stream });
  return { status: res.status, headers: res.headers, text: await res.text() };
};
const metrics = async () => (await fetch(`${gw!.url}/metrics`)).text();

beforeAll(async () => {
  [a, b] = await Promise.all([startUpstream(), startUpstream()]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  a.reset();
  b.reset();
});

describe("failover before the first byte", () => {
  it("tries the higher priority first, and moves on when it fails with 500, 429 or a dead port", async () => {
    const dead = await closedPort();
    gw = await startGateway(config([
      { name: "dead", baseUrl: `http://127.0.0.1:${dead}`, priority: 3 },
      { name: "a", baseUrl: a.url, priority: 2 },
      { name: "b", baseUrl: b.url, priority: 1 },
    ], { maxAttempts: 3, breaker: { failures: 100 } }));
    a.behave({ status: 429 });
    expect((await ask()).status).toBe(200);
    expect(a.requests).toHaveLength(1);
    expect(b.requests).toHaveLength(1);
    const text = await metrics();
    expect(text).toContain('sluice_upstream_attempts_total{channel="dead",outcome="retried"} 1');
    expect(text).toContain('sluice_upstream_attempts_total{channel="a",outcome="retried"} 1');
    expect(text).toContain('sluice_upstream_attempts_total{channel="b",outcome="ok"} 1');
  });

  it("stops at maxAttempts and answers the last failure as docs/api.md#upstream-failures says", async () => {
    gw = await startGateway(config([
      { name: "a", baseUrl: a.url, priority: 2 },
      { name: "b", baseUrl: b.url, priority: 1 },
    ], { maxAttempts: 1, breaker: { failures: 100 } }));
    a.behave({ status: 500 });
    const res = await ask();
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text).error.code).toBe("upstream_error");
    expect(b.requests).toHaveLength(0);
  });

  it("does not retry a request the upstream rejected as bad (400)", async () => {
    gw = await startGateway(config([{ name: "a", baseUrl: a.url, priority: 2 }, { name: "b", baseUrl: b.url }]));
    a.behave({ status: 400 });
    expect((await ask()).status).toBe(400);
    expect(b.requests).toHaveLength(0);
  });

  it("never retries after the first byte: a stream cut mid-way ends with an error event", async () => {
    gw = await startGateway(config([{ name: "a", baseUrl: a.url, priority: 2 }, { name: "b", baseUrl: b.url }]));
    a.behave({ cutAfterChunks: 2, chunkDelayMs: 5 });
    const res = await ask(true);
    expect(res.status).toBe(200);
    expect(JSON.parse(parseSse(res.text).at(-1)!.data).error.code).toBe("upstream_error");
    expect(b.requests).toHaveLength(0);
  });

  it("spreads sessions by weight within a priority", async () => {
    gw = await startGateway(config([
      { name: "a", baseUrl: a.url, weight: 3 },
      { name: "b", baseUrl: b.url, weight: 1 },
    ]));
    // 200 sessions, each on its replica (weighted rendezvous: docs/routing.md#pick)
    for (let i = 0; i < 200; i++) expect((await chat(gw.url, { messages: [userMessage(`task ${i}`)] })).status).toBe(200);
    // 150 expected on a; 6 standard deviations (±37) keep this from ever flaking
    expect(a.requests.length).toBeGreaterThan(113);
    expect(a.requests.length).toBeLessThan(187);
    expect(a.requests.length + b.requests.length).toBe(200);
  });
});

describe("circuit breaker", () => {
  it("opens after consecutive failures, answers 503 model_unavailable at once, probes after the cooldown and closes", async () => {
    gw = await startGateway(config([{ name: "a", baseUrl: a.url }], { breaker: { failures: 2, cooldownMs: 1500 } }));
    a.behave({ status: 503 });
    expect((await ask()).status).toBe(502);
    expect((await ask()).status).toBe(502);
    expect(a.requests).toHaveLength(2);

    // at once: no attempt and no wait (measured in the bench; here only bounded far below any
    // upstream timeout, so a loaded test machine cannot fail it)
    const started = performance.now();
    const refused = await ask();
    expect(performance.now() - started).toBeLessThan(1000);
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.text).error.code).toBe("model_unavailable");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(a.requests).toHaveLength(2);
    expect(await metrics()).toContain('sluice_upstream_attempts_total{channel="a",outcome="circuit_open"} 1');

    a.behave({ status: 200 });
    await expect.poll(async () => (await ask()).status, { interval: 50, timeout: 6000 }).toBe(200);
    expect(a.requests).toHaveLength(3); // exactly one probe went through
    expect((await ask()).status).toBe(200);
  });
});

describe("health checks", () => {
  it("flip sluice_channel_up: 0 before the first check, 1 for a live channel, 0 for a dead one", async () => {
    const dead = await closedPort();
    gw = await startGateway(config([
      { name: "a", baseUrl: a.url, healthCheck: { intervalMs: 100, timeoutMs: 500 } },
      { name: "dead", baseUrl: `http://127.0.0.1:${dead}`, healthCheck: { intervalMs: 100, timeoutMs: 500 } },
    ]));
    await expect.poll(metrics, { interval: 50, timeout: 3000 }).toContain('sluice_channel_up{channel="a"} 1');
    expect(await metrics()).toContain('sluice_channel_up{channel="dead"} 0');
  });
});
