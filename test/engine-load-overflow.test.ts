// A hostile or broken engine's metrics (docs/routing.md#load): two series of 1e308 requests each sum
// past every number; the figure read is bounded, so routing by prefix still picks a channel and
// the request is served.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { MODEL, fleetConfig, post, startEngineMetrics, startReplicas, vllmText, type EngineMetricsServer } from "./support/replica-fleet.js";
import type { Upstream } from "./support/upstream.js";

let replicas: Upstream[];
let metrics: EngineMetricsServer;
let gw: StartedGateway;
beforeAll(async () => {
  [replicas, metrics] = await Promise.all([startReplicas(2), startEngineMetrics()]);
  gw = await startGateway(fleetConfig(replicas, { channel: (i) => ({ engineMetrics: { url: `${metrics.url}/r${i}`, intervalMs: 100 } }) }));
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([...replicas.map((r) => r.close()), metrics.close()]);
});

describe("an engine's figures past every number", () => {
  it("leave the model routed and served", async () => {
    // replica 0 says 1e308 running and 1e308 waiting (Infinity once summed); replica 1 a full KV cache
    metrics.set(0, { text: 'vllm:num_requests_running{engine="0"} 1e308\nvllm:num_requests_waiting{engine="0"} 1e308\n' });
    metrics.set(1, { text: vllmText(0, 0, 1) });
    await Promise.all([metrics.scrapes(0, 2), metrics.scrapes(1, 2)]);
    // before: every call was a 500 (the prefix score of an Infinity load was NaN, no channel was picked)
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await post(gw.url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: `question ${i}` }] });
      await res.text();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200]);
  });
});
