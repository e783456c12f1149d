// Load across instances (docs/routing.md#load): with a shared Redis, a gateway counts the calls the
// other instances have in flight on a replica, so a session whose replica another instance keeps
// busy spills from this one too; without Redis each instance counts only its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { useRedis } from "./support/redis.js";
import { KEY, MODEL, fleetConfig, post, replicaOf, startReplicas } from "./support/replica-fleet.js";
import type { Upstream } from "./support/upstream.js";

const redis = useRedis();
let replicas: Upstream[];
const gateways: StartedGateway[] = [];
beforeAll(async () => {
  replicas = await startReplicas();
});
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await Promise.all(replicas.map((r) => r.close()));
});

/** above routing.imbalance.min (4): a session leaves its replica past the guard (docs/routing.md#prefix) */
const HELD = 6;
const turn = (url: string) => () => post(url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content: `q ${Math.random()}` }] }, { "x-session-id": "busy-elsewhere" });
const loadOf = async (url: string, channel: string) =>
  Number(new RegExp(`sluice_channel_load\\{channel="${channel}"\\} (\\S+)`).exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? 0);

describe("load across instances", () => {
  it("spills a session from its replica while another instance keeps that replica busy", async () => {
    const cluster = { redisUrl: redis.server().url };
    // a never spills (its own calls would move it), b as configured by default
    const a = await startGateway(fleetConfig(replicas, { extra: { cluster, routing: { imbalance: { min: 1000 } } } }));
    const b = await startGateway(fleetConfig(replicas, { extra: { cluster } }));
    gateways.push(a, b);
    const home = await replicaOf(replicas, turn(b.url));
    // gateway a keeps HELD calls open on the session's replica
    replicas[home]!.behave({ hang: true });
    const held = new AbortController();
    const calls = Array.from({ length: HELD }, () =>
      fetch(`${a.url}/v1/chat/completions`, {
        method: "POST",
        signal: held.signal,
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, "x-session-id": "busy-elsewhere" },
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hold" }] }),
      }).catch(() => undefined),
    );
    try {
      await replicas[home]!.waitForRequests(1 + HELD);
      replicas[home]!.behave({ hang: false });
      // b hears a's calls within a share interval or two
      while ((await loadOf(b.url, `r${home + 1}`)) < HELD) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await replicaOf(replicas, turn(b.url))).not.toBe(home);
    } finally {
      held.abort();
      await Promise.all(calls);
    }
    // once a's calls ended and b heard so, the session is back
    while ((await loadOf(b.url, `r${home + 1}`)) > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await replicaOf(replicas, turn(b.url))).toBe(home);
  });
});
