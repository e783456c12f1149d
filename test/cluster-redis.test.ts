// The Redis cluster state (docs/operations.md#redis) against a throwaway redis-server: the same contract as
// the in-process state, then what only several instances show — windows, budgets, breakers, key
// changes and reload notices shared by two states on one Redis, holds of a gone instance drained —
// then two gateways sharing one Redis and one store over real sockets, and Redis stopped and
// started again under them.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createQuota } from "../src/metered/quota.js";
import type { BreakerOptions } from "../src/cluster/breaker.js";
import { createRedisClusterState } from "../src/cluster/redis.js";
import type { ClusterState, KeyChange } from "../src/cluster/types.js";
import { parseConfig } from "../src/config/load.js";
import { createGateway, type Gateway } from "../src/gateway.js";
import { GatewayError } from "../src/http/errors.js";
import { createHttpServer } from "../src/http/server.js";
import { silentObserver } from "../src/observability/observer.js";
import { createStore } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite.js";
import type { Store } from "../src/store/types.js";
import { describeClusterContract, expectLikeTimestampList, hitRate } from "./support/cluster-contract.js";
import { APP_KEY, expectError, gatewayConfig, postChat, user, type ConfigParts } from "./support/fixtures.js";
import { useRedis } from "./support/redis.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const redis = useRedis();
const BREAKER: BreakerOptions = { failures: 3, cooldownMs: 30_000 };
const T0 = Date.UTC(2025, 0, 1);

describeClusterContract("Redis", async () => createRedisClusterState({ url: redis.server().url, prefix: redis.prefix(), breaker: BREAKER, log: () => {} }));

/** States on one Redis under one prefix, as instances of one deployment, once connected and
 *  listening; closed after each test. */
const opened: ClusterState[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});
async function instances(count: number, breaker: BreakerOptions = BREAKER): Promise<ClusterState[]> {
  const prefix = redis.prefix();
  const states = Array.from({ length: count }, () => createRedisClusterState({ url: redis.server().url, prefix, breaker, log: () => {} }));
  opened.push(...states);
  await Promise.all(states.map((s) => vi.waitFor(() => s.ping(), { timeout: 5_000, interval: 10 })));
  return states;
}
const pair = async (breaker?: BreakerOptions) => (await instances(2, breaker)) as [ClusterState, ClusterState];

describe("Redis state: one window, one budget for every instance", () => {
  it("counts hits of both instances in one window, exactly like a list of timestamps, over a seeded run", async () => {
    const [a, b] = await pair();
    let turn = 0;
    await expectLikeTimestampList((now, limit) => hitRate(turn++ % 2 ? a : b, "key:web", limit, now), 3_000, 30);
  });

  it("holds one budget for all: 200 concurrent admissions through two instances hold no more than it pays for", async () => {
    const [a, b] = await pair();
    const store = createSqliteStore(":memory:");
    const quotas = [createQuota(store, a, silentObserver), createQuota(store, b, silentObserver)];
    const limit = { scope: "app:support", label: "App support", maxUsagePoints: 1, qpm: 0 };
    const admitted = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => quotas[i % 2]!.admit([limit], 0.05, T0)));
    expect(admitted.filter((r) => r.status === "fulfilled")).toHaveLength(20);
    await store.close();
  });

  it("drops the holds of an instance not seen for the liveness window, as after a crash", async () => {
    const [a, b] = await pair();
    const spent = async () => 0;
    const holds = [{ scope: "app:x", max: 1 }];
    expect(await a.admit(holds, 0.6, [], T0, spent)).toMatchObject({ ok: true });
    expect(await b.admit(holds, 0.6, [], T0, spent)).toEqual({ ok: false, refused: "budget", scope: "app:x" });
    // a's last heartbeat is made an hour old: it crashed
    const raw = new Redis(redis.server().url);
    const key = (await raw.keys("sluice:*instances"))[0]!;
    const members = await raw.zrange(key, 0, -1);
    for (const member of members) await raw.zadd(key, Date.now() - 3_600_000, member);
    expect(await b.admit(holds, 0.6, [], T0, spent)).toMatchObject({ ok: true });
    raw.disconnect();
  });

  it("loads a scope's spent points from the store once for all instances; a hit counts once, after the load", async () => {
    const [a, b] = await pair();
    let loads = 0;
    const spent = async () => (loads++, 0.5);
    const holds = [{ scope: "share:s1", max: 1 }];
    const rates = [{ scope: "share:s1", limit: 4 }];
    const first = await Promise.all([a.admit(holds, 0.1, rates, T0, spent), b.admit(holds, 0.1, rates, T0, spent), a.admit(holds, 0.1, rates, T0, spent)]);
    expect(first).toEqual([{ ok: true, held: 0.1, heldTokens: 0 }, { ok: true, held: 0.1, heldTokens: 0 }, { ok: true, held: 0.1, heldTokens: 0 }]);
    expect(await b.admit(holds, 0.3, rates, T0, spent)).toEqual({ ok: false, refused: "budget", scope: "share:s1" });
    expect(loads).toBeLessThanOrEqual(2); // at most one load per instance; Redis keeps the first
    await a.settle(["share:s1"], 0.1, 0.2);
    expect(await b.admit(holds, 0.1, rates, T0, spent)).toMatchObject({ ok: true });
    // 3 + 1 hits: the rounds that found spent not loaded counted none
    expect(await b.admit(holds, 0, rates, T0, spent)).toMatchObject({ ok: false, refused: "rate" });
  });
});

describe("Redis state: breakers shared through a mirror on each instance", () => {
  const waitFor = <T>(check: () => T) => vi.waitFor(check, { timeout: 5_000, interval: 10 });

  it("a breaker opened by one instance's failures is open on the other, and one success closes it for both", async () => {
    const [a, b] = await pair();
    const now = Date.now();
    for (let i = 0; i < 3; i++) a.channelResult("local", false, now);
    await waitFor(() => expect(b.breaker("local")).toMatchObject({ phase: "open", failures: 3, retryAt: now + 30_000 }));
    expect(b.admitChannel("local", now + 1)).toBe(false);
    expect(a.admitChannel("local", now + 1)).toBe(false);
    b.channelResult("local", true, now + 2);
    await waitFor(() => expect(a.breaker("local")).toEqual({ phase: "closed", failures: 0, retryAt: 0 }));
    expect(a.admitChannel("local", now + 3)).toBe(true);
  });

  it("counts consecutive failures across instances: two on one and one on the other open it", async () => {
    const [a, b] = await pair();
    const now = Date.now();
    a.channelResult("local", false, now);
    a.channelResult("local", false, now);
    await waitFor(() => expect(b.breaker("local").failures).toBe(2));
    b.channelResult("local", false, now);
    await waitFor(() => expect(a.breaker("local").phase).toBe("open"));
  });

  it("past the cooldown exactly one instance probes; a failed probe reopens it for twice the cooldown", async () => {
    const cooldownMs = 200;
    const [a, b] = await pair({ failures: 1, cooldownMs });
    a.channelResult("local", false, Date.now());
    await waitFor(() => expect(b.breaker("local").phase).toBe("open"));
    const retryAt = b.breaker("local").retryAt;
    // both ask, again and again, until one is let through
    const probes: string[] = [];
    await waitFor(() => {
      const now = Date.now();
      if (a.admitChannel("local", now)) probes.push("a");
      if (b.admitChannel("local", now)) probes.push("b");
      expect(probes.length).toBeGreaterThan(0);
    });
    expect(Date.now()).toBeGreaterThanOrEqual(retryAt);
    await waitFor(() => expect([a.breaker("local").phase, b.breaker("local").phase]).toEqual(["half_open", "half_open"]));
    for (let i = 0; i < 20; i++) expect([a.admitChannel("local", Date.now()), b.admitChannel("local", Date.now())]).toEqual([false, false]);
    expect(probes).toHaveLength(1);

    const prober = probes[0] === "a" ? a : b;
    const failedAt = Date.now();
    prober.channelResult("local", false, failedAt);
    await waitFor(() => expect(a.breaker("local")).toMatchObject({ phase: "open", retryAt: failedAt + 2 * cooldownMs }));
    await waitFor(() => expect(b.breaker("local")).toMatchObject({ phase: "open", retryAt: failedAt + 2 * cooldownMs }));
  });

  it("caps an upstream's Retry-After at maxCooldownMs (default 5 minutes) for every instance", async () => {
    const [a, b] = await pair();
    const now = Date.now();
    for (let i = 0; i < 3; i++) a.channelResult("local", false, now, 999_999_000);
    await waitFor(() => expect(b.breaker("local")).toMatchObject({ phase: "open", retryAt: now + 300_000 }));
    expect(a.breaker("local").retryAt).toBe(now + 300_000);

    const [c, d] = await pair({ failures: 1, cooldownMs: 1_000, maxCooldownMs: 5_000 });
    c.channelResult("local", false, now, 60_000);
    await waitFor(() => expect(d.breaker("local")).toMatchObject({ phase: "open", retryAt: now + 5_000 }));
  });
});

describe("Redis state: key changes and reloads reach every instance", () => {
  it("a revocation published on one instance reaches the other's listeners", async () => {
    const [a, b] = await pair();
    const heard = new Promise<KeyChange>((resolve) => b.onKeyChange(resolve));
    await a.publishKeyChange({ change: "revoked", name: "web" });
    expect(await heard).toEqual({ change: "revoked", name: "web" });
  });

  it("a reload notice reaches the other instances, not the one that sent it", async () => {
    const [a, b] = await pair();
    const heardByA = vi.fn();
    a.onReload(heardByA);
    const heardByB = new Promise<void>((resolve) => b.onReload(resolve));
    await a.publishReload();
    await heardByB;
    expect(heardByA).not.toHaveBeenCalled();
  });
});

describe("Redis state: Redis unreachable", () => {
  it("fails at once with 503 store_unavailable, settles without throwing, and comes back by itself", async () => {
    const a = (await instances(1))[0]!;
    await a.ping();
    const server = redis.server();
    await server.stop();
    try {
      await vi.waitFor(() => expect(a.ping()).rejects.toThrow(), { timeout: 5_000, interval: 20 });
      const err = await hitRate(a, "key:web", 10, T0).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 503, code: "store_unavailable" });
      await a.settle(["app:x"], 1, 1);
      expect(a.admitChannel("local", Date.now())).toBe(true);
    } finally {
      await server.start();
    }
    await vi.waitFor(() => a.ping(), { timeout: 10_000, interval: 50 });
    expect((await hitRate(a, "key:web", 10, T0)).allowed).toBe(true);
  });
});

describe("Redis state: Redis stalled", () => {
  it("answers 503 store_unavailable within about a second to every call made while Redis answers nothing", async () => {
    const a = (await instances(1))[0]!;
    const raw = new Redis(redis.server().url);
    // the server keeps its connections but processes no command of any client for 2.5 s
    await raw.client("PAUSE", 2_500, "ALL");
    try {
      // calls begin over the first second of the stall, 50 ms apart
      const waits = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          await new Promise((resolve) => setTimeout(resolve, i * 50));
          const started = performance.now();
          const err = await hitRate(a, "key:web", 10, T0).then(() => undefined, (e: unknown) => e);
          expect(err).toMatchObject({ status: 503, code: "store_unavailable" });
          return performance.now() - started;
        }),
      );
      expect(Math.max(...waits)).toBeLessThan(1_300);
    } finally {
      raw.disconnect();
    }
    await vi.waitFor(() => a.ping(), { timeout: 5_000, interval: 50 });
  });
});

// ---- Two gateways sharing one Redis and one store, over real sockets ----

const ADMIN_KEY = "sk-test-admin-key-0001";
// m1 costs charsPointsPrice 2 per 1,000 tokens and the upstream reports 500 + 500: 2 points a chat
const POINTS_PER_CHAT = 2;

interface Instance {
  url: string;
  gateway: Gateway;
  server: Server;
  reloads: number;
}
interface Deployment {
  a: Instance;
  b: Instance;
  store: Store;
  close(): Promise<void>;
}

let upstream: Upstream;
beforeAll(async () => {
  upstream = await startUpstream({ usage: { prompt_tokens: 500, completion_tokens: 500 } });
});
afterAll(() => upstream.close());
const deployments: Deployment[] = [];
afterEach(async () => {
  await Promise.all(deployments.splice(0).map((d) => d.close()));
  upstream.reset();
});

/** Two gateways on one store and one Redis: each with a state of its own under one prefix, or
 *  (`fromConfig`) with the state the gateway builds from `cluster.redisUrl`. Resolves once both are ready. */
async function deploy(parts: ConfigParts, fromConfig = false, clock?: () => number): Promise<Deployment> {
  const raw = gatewayConfig(upstream.url, parts) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  raw.apiKeys.push({ name: "root", kind: "admin", key: ADMIN_KEY });
  for (const channel of raw.channels) channel.healthCheck = { intervalMs: 0 };
  const text = JSON.stringify({ ...raw, server: { log: { level: "silent" } }, ...(fromConfig && { cluster: { redisUrl: redis.server().url } }) });
  const store = createStore({ driver: "memory" });
  const prefix = redis.prefix();
  const started: Instance[] = [];
  const states: ClusterState[] = [];
  for (let i = 0; i < 2; i++) {
    const config = parseConfig(JSON.parse(text));
    const state = fromConfig ? undefined : createRedisClusterState({ url: redis.server().url, prefix, breaker: config.routing.breaker, log: () => {} });
    if (state) states.push(state);
    const instance = { reloads: 0 } as Instance;
    const loadConfig = () => (instance.reloads++, parseConfig(JSON.parse(text)));
    instance.gateway = createGateway(config, { store, state, loadConfig, clock });
    instance.server = createHttpServer(toNodeHandler(instance.gateway.app), config.server);
    await new Promise<void>((resolve) => instance.server.listen(0, "127.0.0.1", resolve));
    instance.url = `http://127.0.0.1:${(instance.server.address() as AddressInfo).port}`;
    started.push(instance);
  }
  for (const { url } of started) await vi.waitFor(async () => expect((await fetch(`${url}/readyz`)).status).toBe(200), { timeout: 5_000, interval: 20 });
  const deployment: Deployment = {
    a: started[0]!,
    b: started[1]!,
    store,
    async close() {
      for (const { server, gateway } of started) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await gateway.close();
      }
      await Promise.all(states.map((s) => s.close()));
      await store.close();
    },
  };
  deployments.push(deployment);
  return deployment;
}

function admin(url: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body !== undefined && { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
async function createKey(url: string, name: string): Promise<string> {
  const res = await admin(url, "POST", "/api/admin/keys", { name, kind: "app", appId: "a1" });
  expect(res.status).toBe(201);
  return ((await res.json()) as { key: string }).key;
}
/** 200 chats at once, alternating between the two instances: each answer's status and error code. */
async function burst(d: Deployment): Promise<Array<{ status: number; code?: string }>> {
  return Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const res = await postChat((i % 2 ? d.b : d.a).url, { messages: [user(`q${i}`)] });
      const body = (await res.json()) as { error?: { code: string } };
      return { status: res.status, code: body.error?.code };
    }),
  );
}
const count = (answers: Array<{ status: number; code?: string }>, status: number, code?: string) =>
  answers.filter((r) => r.status === status && r.code === code).length;

describe("two gateways on one Redis", () => {
  it("hold one QPM window: 200 concurrent chats through both, exactly the key's qpm answered", async () => {
    const d = await deploy({ key: { qpm: 30 } });
    const answers = await burst(d);
    expect(count(answers, 200)).toBe(30);
    expect(count(answers, 429, "rate_limit_exceeded")).toBe(170);
    expect(upstream.requests).toHaveLength(30);
  });

  it("hold one budget: 200 concurrent chats through both never spend past it", async () => {
    const max = 41;
    const d = await deploy({ app: { maxUsagePoints: max } });
    // a model that writes all of max_tokens (and no more); its prompt count is the gateway's at most
    upstream.behave({ usage: { prompt_tokens: 1, completion_tokens: 1000 }, honourMaxTokens: true });
    const answers = await burst(d);
    const answered = count(answers, 200);
    expect(answered).toBeGreaterThanOrEqual(Math.floor(max / POINTS_PER_CHAT));
    expect(answered + count(answers, 429, "insufficient_quota")).toBe(200);
    // every worst case (or what is left of the budget) is held before the call: the spend never passes it
    await vi.waitFor(async () => expect((await d.store.summarizeUsage({ appId: "a1" })).totals.requests).toBe(answered));
    const spent = await d.store.getSpent("app:a1");
    expect(spent).toBeLessThanOrEqual(max + 1e-9);
    expect(spent).toBeGreaterThan(max - 0.1);
  });

  it("hold one tokens-per-minute allowance: 200 concurrent chats through both never pass the key's tpm", async () => {
    const tpm = 20_000;
    // one minute for the whole burst, whatever the machine's speed
    const d = await deploy({ key: { tpm } }, false, () => T0 + 30_000);
    upstream.behave({ usage: { prompt_tokens: 1, completion_tokens: 1000 }, honourMaxTokens: true });
    const answers = await burst(d);
    const answered = count(answers, 200);
    expect(answered + count(answers, 429, "tpm_exceeded")).toBe(200);
    await vi.waitFor(async () => expect((await d.store.summarizeUsage({ appId: "a1" })).totals.requests).toBe(answered));
    const { inputTokens, outputTokens } = (await d.store.summarizeUsage({ appId: "a1" })).totals;
    // every call's prompt bound + max_tokens is held before it is sent: the minute's tokens never
    // pass the tpm by more than one call's worth (here, not at all: the upstream reports less prompt)
    expect(inputTokens + outputTokens).toBeLessThanOrEqual(tpm + 1001);
    expect(inputTokens + outputTokens).toBeGreaterThan(tpm - 1001);
    expect(answered).toBeLessThan(200);
  });

  it("refuse a key revoked on one instance on the other within a second", async () => {
    const d = await deploy({});
    const key = await createKey(d.a.url, "shared");
    expect((await postChat(d.b.url, { messages: [user("on b")] }, key)).status).toBe(200);
    expect((await admin(d.a.url, "DELETE", "/api/admin/keys/shared")).status).toBe(200);
    await vi.waitFor(async () => expect((await postChat(d.b.url, { messages: [user("again")] }, key)).status).toBe(401), {
      timeout: 1_000,
      interval: 10,
    });
  });

  it("see a breaker opened by one instance open on the other: 503 model_unavailable there without a call", async () => {
    const d = await deploy({ extra: { routing: { maxAttempts: 1, breaker: { failures: 2, cooldownMs: 60_000 } } } });
    // 503: the channel's own fault (a plain 500 would need a second caller to count)
    upstream.behave({ status: 503 });
    for (let i = 0; i < 2; i++) await expectError(await postChat(d.a.url, { messages: [user(`fail ${i}`)] }), 502, "upstream_error");
    const breakerOnB = async () => {
      const res = await admin(d.b.url, "GET", "/api/admin/channels");
      return ((await res.json()) as { channels: Array<{ breaker: { state: string } }> }).channels[0]!.breaker.state;
    };
    await vi.waitFor(async () => expect(await breakerOnB()).toBe("open"), { timeout: 2_000, interval: 10 });
    await expectError(await postChat(d.b.url, { messages: [user("on b")] }), 503, "model_unavailable");
    expect(upstream.requests).toHaveLength(2);
  });

  it("hold one share API window per link: calls to either instance count against shareLinks[].apiQpm", async () => {
    const d = await deploy({ extra: { shareLinks: [{ shareId: "s1", appId: "a1", apiQpm: 3 }] } });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${(i % 2 ? d.b : d.a).url}/api/share/chats`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ shareId: "s1", outLinkUid: `local-${i}` }),
      });
      await res.text();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
  });

  it("reload together: a reload asked of one instance reloads the other", async () => {
    const d = await deploy({});
    expect((await admin(d.a.url, "POST", "/api/admin/reload")).status).toBe(200);
    await vi.waitFor(() => expect(d.b.reloads).toBe(1), { timeout: 2_000, interval: 10 });
    expect(d.a.reloads).toBe(1);
  });
});

describe("two gateways built from cluster.redisUrl, Redis stopped and started again", () => {
  it("answer 503 store_unavailable (no limit of the key needing it) and /readyz 503 while it is down, and recover by themselves with the key changes missed", async () => {
    const d = await deploy({}, true);
    const key = await createKey(d.a.url, "during-outage");
    expect((await postChat(d.b.url, { messages: [user("known on b")] }, key)).status).toBe(200);
    const server = redis.server();
    const calls = upstream.requests.length;
    await server.stop();
    try {
      for (const { url } of [d.a, d.b]) {
        await vi.waitFor(async () => expect((await fetch(`${url}/readyz`)).status).toBe(503), { timeout: 3_000, interval: 20 });
        const res = await postChat(url, { messages: [user("down")] });
        expect(res.headers.get("retry-after")).toBe("1");
        expect((await expectError(res, 503, "store_unavailable")).type).toBe("api_error");
      }
      expect(upstream.requests).toHaveLength(calls);
      // revoked while no instance can tell the others
      expect((await admin(d.a.url, "DELETE", "/api/admin/keys/during-outage")).status).toBe(200);
    } finally {
      await server.start();
    }
    for (const { url } of [d.a, d.b]) {
      await vi.waitFor(async () => expect((await fetch(`${url}/readyz`)).status).toBe(200), { timeout: 5_000, interval: 20 });
      await vi.waitFor(async () => expect((await postChat(url, { messages: [user("back")] }, APP_KEY)).status).toBe(200), { timeout: 2_000, interval: 20 });
    }
    await vi.waitFor(async () => expect((await postChat(d.b.url, { messages: [user("revoked")] }, key)).status).toBe(401), { timeout: 2_000, interval: 20 });
  });
});
