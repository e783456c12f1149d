// Spill (docs/routing.md#spill): a session leaves its replica while that one's breaker is open, its
// connections are all busy, or its engine reports a long queue or a full KV cache — and comes back
// when the load falls. An engine /metrics that is garbage, huge or never answers changes nothing
// but the load estimate: the session stays where it is and is answered.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { MODEL, fleetConfig, post, replicaOf, servedBy, startEngineMetrics, startReplicas, vllmText, type EngineMetricsServer } from "./support/replica-fleet.js";
import type { Upstream } from "./support/upstream.js";

let replicas: Upstream[];
let metrics: EngineMetricsServer;
let gw: StartedGateway | undefined;
beforeAll(async () => {
  [replicas, metrics] = await Promise.all([startReplicas(), startEngineMetrics()]);
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  for (const r of replicas) r.reset();
  for (let i = 0; i < replicas.length; i++) metrics.set(i, { text: vllmText(0) });
});
afterAll(async () => {
  await Promise.all([...replicas.map((r) => r.close()), metrics.close()]);
});

const INTERVAL_MS = 100;
const withEngineMetrics = (i: number) => ({ engineMetrics: { url: `${metrics.url}/r${i}`, intervalMs: INTERVAL_MS } });
const turn = (session: string, extra: Record<string, unknown> = {}) => () =>
  post(gw!.url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: `q ${Math.random()}` }], ...extra }, { "x-session-id": session });
const decisions = async (decision: string) => Number(new RegExp(`sluice_route_decisions_total\\{model="m1",decision="${decision}"\\} (\\d+)`).exec(await (await fetch(`${gw!.url}/metrics`)).text())?.[1]);

describe("spill", () => {
  it("leaves a replica whose breaker opened, for one other replica, never back to the failing one", async () => {
    gw = await startGateway(fleetConfig(replicas, { extra: { routing: { breaker: { failures: 1, cooldownMs: 60_000 } } } }));
    const home = await replicaOf(replicas, turn("breaker"));
    replicas[home]!.behave({ status: 503 });
    // this turn fails over; the breaker opens
    const failedOver = await servedBy(replicas, turn("breaker"));
    expect(failedOver).toContain(home);
    const away = new Set<number>();
    for (let i = 0; i < 5; i++) away.add(await replicaOf(replicas, turn("breaker")));
    expect(away.size).toBe(1);
    expect(away.has(home)).toBe(false);
  });

  it("leaves a replica whose connections are all busy, and comes back once one is free", async () => {
    gw = await startGateway(fleetConfig(replicas, { channel: () => ({ connections: 1 }) }));
    const home = await replicaOf(replicas, turn("gate"));
    replicas[home]!.behave({ hang: true });
    const held = new AbortController();
    const holding = fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      signal: held.signal,
      headers: { "content-type": "application/json", authorization: "Bearer sk-routing-app-key-0001", "x-session-id": "gate" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "held" }] }),
    }).catch(() => undefined);
    // the first turn and the held call, since the last reset
    await replicas[home]!.waitForRequests(2);
    replicas[home]!.behave({ hang: false });
    // the held call has the one connection: the next turn goes elsewhere
    const spilled = await decisions("spilled");
    expect(await replicaOf(replicas, turn("gate"))).not.toBe(home);
    expect(await decisions("spilled")).toBe(spilled + 1);
    held.abort();
    await holding;
    await replicas[home]!.waitForAbort();
    expect(await replicaOf(replicas, turn("gate"))).toBe(home);
  });

  it("leaves a replica whose engine reports a long queue or a full KV cache, and comes back when it clears", async () => {
    gw = await startGateway(fleetConfig(replicas, { channel: withEngineMetrics }));
    const home = await replicaOf(replicas, turn("queue"));
    metrics.set(home, { text: vllmText(40, 8) });
    await metrics.scrapes(home, 2);
    expect(await replicaOf(replicas, turn("queue"))).not.toBe(home);
    metrics.set(home, { text: vllmText(0, 0, 0.97) });
    await metrics.scrapes(home, 2);
    expect(await replicaOf(replicas, turn("queue"))).not.toBe(home);
    metrics.set(home, { text: vllmText(0, 1, 0.5) });
    await metrics.scrapes(home, 2);
    expect(await replicaOf(replicas, turn("queue"))).toBe(home);
    expect(await (await fetch(`${gw.url}/metrics`)).text()).toMatch(new RegExp(`sluice_channel_load\\{channel="r${home + 1}"\\} 1\\b`));
  });
});

describe("least loaded", () => {
  it("with routing.affinity off, sends no request to a replica busier than the others", async () => {
    gw = await startGateway(fleetConfig(replicas, { extra: { routing: { affinity: "off" } } }));
    for (const r of replicas) r.behave({ hang: true });
    const held = new AbortController();
    const holding = fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      signal: held.signal,
      headers: { "content-type": "application/json", authorization: "Bearer sk-routing-app-key-0001" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "held" }] }),
    }).catch(() => undefined);
    const busy = await Promise.race(replicas.map((r, i) => r.waitForRequests(1).then(() => i)));
    for (const r of replicas) r.behave({ hang: false });
    try {
      const served = new Set<number>();
      for (let i = 0; i < 12; i++) served.add(await replicaOf(replicas, turn("ignored")));
      expect(served.has(busy)).toBe(false);
      expect(served.size).toBeGreaterThan(1);
      expect(await decisions("least_loaded")).toBeGreaterThanOrEqual(13);
    } finally {
      held.abort();
      await holding;
    }
  });
});

describe("engine /metrics that cannot be read", () => {
  const answers: Array<[string, () => { text: string } | { hang: true }]> = [
    ["garbage", () => ({ text: "\u0000\u0001 not prometheus {{{\nvllm:num_requests_waiting{ 99\nvllm:num_requests_waiting NaN\n".repeat(50) })],
    // the queue it reports lies past the bound on what is read
    ["huge", () => ({ text: "# padding\n".repeat(600_000) + vllmText(500, 50) })],
    ["hanging", () => ({ hang: true })],
  ];
  for (const [name, answer] of answers) {
    it(`a ${name} one falls back to calls in flight: the session stays and is answered`, async () => {
      gw = await startGateway(fleetConfig(replicas, { channel: withEngineMetrics }));
      const home = await replicaOf(replicas, turn(name));
      // first a real queue that spills, then the unreadable text: stale after 3 intervals
      metrics.set(home, { text: vllmText(40, 8) });
      await metrics.scrapes(home, 2);
      expect(await replicaOf(replicas, turn(name))).not.toBe(home);
      metrics.set(home, answer());
      await metrics.scrapes(home, 5);
      for (let i = 0; i < 3; i++) expect(await replicaOf(replicas, turn(name))).toBe(home);
    });
  }
});
