// An engine's /metrics is read in slices, the event loop given back between them (issue 36, item 6;
// docs/routing.md#load): a hostile engine answering 4 MiB of one-sample lines on every scrape never
// holds the gateway's event loop 60 ms, and the figures at the end of those 4 MiB are still read
// (before: 514 ms here, /healthz answered in up to 274 ms; after: 14 ms, /healthz within 12 ms). A
// latency ceiling: this file runs in the "alone" group (vitest.config.ts).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";

const MIB = 1024 * 1024;
const FIGURES = "vllm:num_requests_running 7\nvllm:num_requests_waiting 5\n";
// 4 MiB (the most a scrape reads) of lines the gateway does not know, the engine's figures last
const TEXT = Buffer.from("m 1\n".repeat((4 * MIB - FIGURES.length) / 4) + FIGURES);
const INTERVAL_MS = 250;

let served = 0;
let onServed = () => {};
const engine = createServer((_req, res) => {
  res.on("finish", () => (served++, onServed()));
  res.writeHead(200, { "content-type": "text/plain; version=0.0.4" }).end(TEXT);
});
let gw: StartedGateway;

beforeAll(async () => {
  await new Promise<void>((resolve) => engine.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(engine.address() as AddressInfo).port}/metrics`;
  gw = await startGateway({
    channels: [{ name: "gpu", baseUrl: "http://127.0.0.1:9", models: ["m"], healthCheck: { intervalMs: 0 }, engineMetrics: { url, intervalMs: INTERVAL_MS } }],
    llmModels: [{ model: "m", maxContext: 4096, maxResponse: 100 }],
    apps: [{ id: "a", model: "m", models: ["m"] }],
    apiKeys: [{ name: "app", kind: "app", appId: "a", key: "sk-engine-lag-app-key-01" }],
  });
});
afterAll(async () => {
  await gw?.close();
  engine.closeAllConnections();
  await new Promise<void>((resolve) => engine.close(() => resolve()));
});

const servedAtLeast = (n: number) => new Promise<void>((resolve) => (onServed = () => served >= n && resolve()));
const channelLoad = async () => Number(/^sluice_channel_load\{channel="gpu"\} (\S+)/m.exec(await (await fetch(`${gw.url}/metrics`)).text())?.[1]);

describe("a 4 MiB /metrics of one-sample lines", () => {
  it("is read whole on every scrape, the event loop never held 60 ms (before: 140–600 ms per scrape, /healthz 154–595 ms)", async () => {
    await servedAtLeast(served + 1); // the first scrape, its parse compiled
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    await sleep(25); // the histogram records from its second tick on
    const healthz: number[] = [];
    const scrapes = servedAtLeast(served + 4);
    let done = false;
    void scrapes.then(() => (done = true));
    while (!done) {
      const started = performance.now();
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
      healthz.push(performance.now() - started);
      await sleep(20);
    }
    // the last scrape's text is parsed once its last byte is in: give it a slice or two more
    await sleep(INTERVAL_MS / 2);
    delay.disable();
    const maxMs = delay.max / 1e6;
    expect(await channelLoad()).toBe(12);
    expect(maxMs, `longest event-loop delay ${maxMs.toFixed(1)} ms; /healthz up to ${Math.max(...healthz).toFixed(0)} ms`).toBeLessThan(60);
  });
});
