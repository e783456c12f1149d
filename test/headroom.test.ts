// Headroom (docs/routing.md#priority-and-fairness): which channels of a model may take one more batch
// line now — none while an interactive call waits in the gate, its engine reports more waiting
// requests than the rule allows, or its calls in flight would eat the reserve of its `concurrency`;
// a channel without `concurrency` at most `perChannel` lines at once.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallAnswer } from "../src/metered/memory-call.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-headroom-test-key-01";
const RULE = { reserve: 0.25, perChannel: 2, maxEngineWaiting: 0 };
let gated: Upstream;
let open: Upstream;
let metrics: Server;
let metricsText = "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n";
let gw: StartedGateway;

beforeAll(async () => {
  [gated, open] = await Promise.all([startUpstream({ hang: true }), startUpstream({ hang: true })]);
  metrics = createServer((_req, res) => res.end(metricsText));
  await new Promise<void>((resolve) => metrics.listen(0, "127.0.0.1", resolve));
  const metricsUrl = `http://127.0.0.1:${(metrics.address() as AddressInfo).port}/metrics`;
  const channel = (name: string, baseUrl: string, model: string, extra: object) => ({ name, baseUrl, models: [model], healthCheck: { intervalMs: 0 }, ...extra });
  gw = await startGateway({
    channels: [
      channel("gated", gated.url, "g", { concurrency: 4, engineMetrics: { url: metricsUrl, intervalMs: 100 } }),
      channel("open", open.url, "o", { connections: 2 }),
    ],
    llmModels: ["g", "o"].map((model) => ({ model, maxContext: 4000, maxResponse: 100, charsPointsPrice: 0 })),
    routing: { maxAttempts: 1 },
    apps: [{ id: "a", model: "g", models: ["g", "o"] }],
    apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
  });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([gated, open].map((u) => u?.close()));
  await new Promise((resolve) => metrics?.close(resolve));
});

/** Polls `check` until it holds or 5 s pass. */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in 5 s");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Calls left hanging upstream, cut at the end of a test. */
function caller() {
  const stop = new AbortController();
  const calls: Promise<CallAnswer>[] = [];
  const call = (model: string, priority?: number, channel?: string) =>
    calls.push(
      gw.gateway.call("chat", {
        headers: { authorization: `Bearer ${KEY}` },
        path: "/v1/chat/completions",
        body: { model, messages: [{ role: "user", content: "hi" }] },
        signal: stop.signal,
        internal: priority === undefined ? undefined : { priority, channel, paced: true },
      }),
    );
  return { call, end: () => (stop.abort(), Promise.all(calls)) };
}

const freeOf = (model: string, rule = RULE) => gw.gateway.headroom(model, rule).find((s) => s.channel === (model === "g" ? "gated" : "open"))?.free ?? 0;

describe("headroom", () => {
  it("leaves the reserve of a channel's concurrency free, and none while an interactive call waits", async () => {
    await until(() => freeOf("g") === 3); // 4 slots, a quarter (1) kept
    const c = caller();
    try {
      c.call("g", -1000, "gated");
      c.call("g", -1000, "gated");
      await gated.waitForRequests(2);
      expect(freeOf("g")).toBe(1);
      c.call("g");
      c.call("g");
      await gated.waitForRequests(4);
      expect(freeOf("g")).toBe(0);
    } finally {
      await c.end();
    }
    await until(() => freeOf("g") === 3);
  });

  it("gives a channel without concurrency at most perChannel lines at once", async () => {
    expect(freeOf("o")).toBe(2);
    const c = caller();
    try {
      c.call("o", -1000, "open");
      await open.waitForRequests(1);
      expect(freeOf("o")).toBe(1);
      // interactive calls in flight are not lines: only the engine and the gate's queue judge them
      c.call("o");
      await open.waitForRequests(2);
      expect(freeOf("o")).toBe(1);
      expect(freeOf("o", { ...RULE, perChannel: 1 })).toBe(0);
      // its 2 connections taken: an interactive call waiting in the gate closes the channel to lines
      c.call("o");
      await until(() => freeOf("o") === 0);
    } finally {
      await c.end();
    }
  });

  it("takes no line on a channel whose engine reports more waiting than the rule allows", async () => {
    await until(() => freeOf("g") === 3);
    metricsText = "vllm:num_requests_running 8\nvllm:num_requests_waiting 2\n";
    try {
      await until(() => freeOf("g") === 0);
      expect(freeOf("g", { ...RULE, maxEngineWaiting: 2 })).toBe(3);
    } finally {
      metricsText = "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n";
    }
    await until(() => freeOf("g") === 3);
  });
});
