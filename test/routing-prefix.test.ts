// Routing by prefix (docs/routing.md#prefix), over four test replicas: the users of one app (its
// long system prompt, their own questions) gather on the replica that holds the prompt; an
// overloaded one stops taking the app's new users; a session stays on its replica under a load
// below the guard; the index is bounded by cacheTokens; a reload keeps the other channels'
// entries; a channel that is a router itself gets the session, app and priority and no pick is made.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/config/load.js";
import { createGateway } from "../src/gateway.js";
import { createHttpServer } from "../src/http/server.js";
import { createStore } from "../src/store/index.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { KEY, MODEL, fleetConfig, post, replicaOf, startEngineMetrics, startReplicas, vllmText, type EngineMetricsServer } from "./support/replica-fleet.js";
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

/** An app's system prompt: 8 KB, its own from the first byte. */
const appPrompt = (app: string) => `You answer for app ${app}. ${Array.from({ length: 800 }, (_, i) => `${app}-rule-${i}`).join(" ")}`.slice(0, 8192);
/** A new user of the app: no session signal, so the key is the fingerprint of the prompt and this question. */
const newUser = (url: string, app: string, user: number) => () =>
  post(url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "system", content: appPrompt(app) }, { role: "user", content: `user ${user} asks ${Math.random()}` }] });
const metricsText = async () => (await fetch(`${gw!.url}/metrics`)).text();
const decisions = async (decision: string) => Number(new RegExp(`sluice_route_decisions_total\\{model="m1",decision="${decision}"\\} (\\d+)`).exec(await metricsText())?.[1]);
const withEngineMetrics = (i: number) => ({ engineMetrics: { url: `${metrics.url}/r${i}`, intervalMs: 100 } });

/** The replicas the users of `app` went to. */
async function homesOf(url: string, app: string, users: number): Promise<Set<number>> {
  const homes = new Set<number>();
  for (let u = 0; u < users; u++) homes.add(await replicaOf(replicas, newUser(url, app, u)));
  return homes;
}

describe("routing by prefix", () => {
  it("two apps' users land on the replicas holding their prompts, not spread", async () => {
    // before (routing by session alone): each user's fingerprint hashed them, alpha's 10 over 4 replicas
    gw = await startGateway(fleetConfig(replicas));
    for (const app of ["alpha", "beta"]) expect((await homesOf(gw.url, app, 10)).size, app).toBe(1);
    expect(await decisions("prefix")).toBe(18);
    // the first user of each app found nothing, the other 18 their whole prompt's chunks
    const bucket = async (le: string) => Number(new RegExp(`sluice_route_prefix_match_ratio_bucket\\{le="${le}",model="m1"\\} (\\d+)`).exec(await metricsText())?.[1]);
    expect([await bucket("0"), await bucket("0.99"), await bucket("\\+Inf")]).toEqual([2, 2, 20]);
  });

  it("an overloaded replica stops taking its prefix's new users; they gather elsewhere, and stay with the prompt", async () => {
    // before: the users kept off the busy replica spread over the other 3
    gw = await startGateway(fleetConfig(replicas, { channel: withEngineMetrics }));
    const [home] = await homesOf(gw.url, "alpha", 3);
    metrics.set(home!, { text: vllmText(30, 8) });
    await metrics.scrapes(home!, 2);
    const away = await homesOf(gw.url, "alpha", 6);
    expect(away.has(home!)).toBe(false);
    // they gathered on one other replica, which now holds the prompt too
    expect(away.size).toBe(1);
    metrics.set(home!, { text: vllmText(0, 1) });
    await metrics.scrapes(home!, 2);
    const back = await homesOf(gw.url, "alpha", 3);
    expect(back.size).toBe(1);
    expect([home, ...away]).toContain([...back][0]);
  });

  it("keeps a session on its replica while its load is below the guard", async () => {
    // before (routing.spillLoad 2 of routing by session): two calls held on the replica moved the next turn
    gw = await startGateway(fleetConfig(replicas));
    const turn = (content: string) => () => post(gw!.url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content }] }, { "x-session-id": "kept" });
    const home = await replicaOf(replicas, turn("first"));
    replicas[home]!.behave({ hang: true });
    const held = new AbortController();
    const holding = [1, 2].map((i) =>
      fetch(`${gw!.url}/v1/chat/completions`, {
        method: "POST",
        signal: held.signal,
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, "x-session-id": "kept" },
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: `held ${i}` }] }),
      }).catch(() => undefined),
    );
    try {
      await replicas[home]!.waitForRequests(3);
      replicas[home]!.behave({ hang: false });
      for (let i = 0; i < 3; i++) expect(await replicaOf(replicas, turn(`turn ${i}`))).toBe(home);
    } finally {
      held.abort();
      await Promise.all(holding);
    }
  });

  it("bounds each channel's index by its cacheTokens", async () => {
    // before: no index, and cacheTokens refused as an unknown key
    gw = await startGateway(fleetConfig(replicas, { channel: () => ({ cacheTokens: 1024 }) }));
    for (let app = 0; app < 12; app++) await (await newUser(gw.url, `app${app}`, 0)()).text();
    const entries = [...(await metricsText()).matchAll(/sluice_prefix_index_entries\{channel="r\d"\} (\d+)/g)].map((m) => Number(m[1]));
    expect(entries).toHaveLength(4);
    // 1024 tokens: 4 chunks of 1 KiB; each prompt has 8
    for (const n of entries) expect(n).toBeLessThanOrEqual(4);
    expect(Math.max(...entries)).toBe(4);
  });
});

describe("reloads", () => {
  it("a reload that removes another channel keeps what the index knows of the rest", async () => {
    let raw = fleetConfig(replicas, { extra: { server: { log: { level: "silent" } }, store: { driver: "memory" } } });
    const config = parseConfig(raw, {});
    const store = createStore(config.store);
    const gateway = createGateway(config, { store, loadConfig: () => parseConfig(raw, {}) });
    const server: Server = createHttpServer(toNodeHandler(gateway.app), config.server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const prefixDecisions = async () => Number(/sluice_route_decisions_total\{model="m1",decision="prefix"\} (\d+)/.exec(await (await fetch(`${url}/metrics`)).text())?.[1]);
    try {
      const [home] = await homesOf(url, "alpha", 1);
      const removed = (home! + 1) % replicas.length;
      raw = { ...raw, channels: (raw.channels as Array<Record<string, unknown>>).filter((_, i) => i !== removed).map((c) => ({ ...c, connections: 64 })) };
      expect((await gateway.reload()).ok).toBe(true);
      // the next user of the app is matched at once: the index survived the new router (before:
      // no index, and that user went to another replica than the app's first)
      const before = await prefixDecisions();
      expect(await replicaOf(replicas, newUser(url, "alpha", 1))).toBe(home);
      expect(await prefixDecisions()).toBe(before + 1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await gateway.close();
      await store.close();
    }
  });
});

describe("channels that are routers themselves", () => {
  it("forward the session digest, the app and the priority, and make no pick among them", async () => {
    // before: upstreamRouter refused as an unknown key
    gw = await startGateway(fleetConfig(replicas, { channel: () => ({ upstreamRouter: true }), extra: { apps: [{ id: "a1", model: MODEL, priority: 5 }] } }));
    for (let i = 0; i < 4; i++) await (await post(gw.url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "system", content: appPrompt("alpha") }, { role: "user", content: `q ${i}` }] }, { "x-session-id": "client-session-1" })).text();
    const sent = replicas.flatMap((r) => r.requests);
    expect(sent).toHaveLength(4);
    for (const r of sent) {
      expect(r.headers["x-session-id"]).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(r.headers["x-session-id"]).not.toContain("client-session-1");
      expect(r.headers["x-llm-d-inference-fairness-id"]).toBe("a1");
      expect(r.headers["x-llm-d-inference-objective"]).toBe("priority-5");
    }
    expect(new Set(sent.map((r) => r.headers["x-session-id"])).size).toBe(1);
    expect([await decisions("prefix"), await decisions("pinned"), await decisions("least_loaded")]).toEqual([0, 0, 4]);
  });
});
