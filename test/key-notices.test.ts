// Notices on the cluster channel (Redis pub/sub) are not trusted for key identities: anyone who can
// publish there could otherwise mint a key, an admin one too. A `created` notice only makes an
// instance read the created keys from the store again, and a stored key is only ever app or global.
// A real gateway on a real redis-server; the forger publishes with its own Redis connection.
import { createHash } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRedisClusterState } from "../src/cluster/redis.js";
import type { ClusterState } from "../src/cluster/types.js";
import { parseConfig } from "../src/config/load.js";
import { createGateway, type Gateway } from "../src/gateway.js";
import { createHttpServer } from "../src/http/server.js";
import { createStore } from "../src/store/index.js";
import type { CreatedKeyRow, Store } from "../src/store/types.js";
import { gatewayConfig } from "./support/fixtures.js";
import { useRedis } from "./support/redis.js";

const redis = useRedis();
const ADMIN_KEY = "sk-notices-admin-0001";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

interface Deployed {
  url: string;
  store: Store;
  /** the store's created-key reads started so far */
  reads(): number;
  /** holds every created-key read started from now until release() */
  hold(): void;
  /** rows the store's reads answer besides its own (as a store written to by hand would) */
  planted: CreatedKeyRow[];
  release(): void;
  publish(message: unknown): Promise<void>;
}
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** One gateway on Redis, its store's created-key reads counted and held on demand. */
async function deploy(): Promise<Deployed> {
  const raw = gatewayConfig("http://127.0.0.1:9", {}) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  raw.apiKeys.push({ name: "root", kind: "admin", key: ADMIN_KEY });
  for (const channel of raw.channels) channel.healthCheck = { intervalMs: 0 };
  const config = parseConfig({ ...raw, server: { log: { level: "silent" } } });
  const prefix = redis.prefix();

  const inner = createStore({ driver: "memory" });
  let reads = 0;
  let gate: Promise<void> | undefined;
  let open = () => {};
  const planted: CreatedKeyRow[] = [];
  const store: Store = {
    ...inner,
    async listCreatedKeys() {
      reads++;
      await gate;
      return [...(await inner.listCreatedKeys()), ...planted];
    },
  };
  const state: ClusterState = createRedisClusterState({ url: redis.server().url, prefix, breaker: config.routing.breaker, log: () => {} });
  const gateway: Gateway = createGateway(config, { store, state });
  const server: Server = createHttpServer(toNodeHandler(gateway.app), config.server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const forger = new Redis(redis.server().url);
  closers.push(async () => {
    open();
    forger.disconnect();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await gateway.close();
    await state.close();
    await inner.close();
  });
  await vi.waitFor(async () => expect((await fetch(`${url}/readyz`)).status).toBe(200), { timeout: 5_000, interval: 20 });
  return {
    url,
    store: inner,
    reads: () => reads,
    planted,
    hold: () => void (gate = new Promise<void>((resolve) => (open = resolve))),
    release: () => ((gate = undefined), open()),
    publish: async (message) => void (await forger.publish(`sluice:${prefix}keys`, JSON.stringify(message))),
  };
}

function row(key: string, over: Partial<CreatedKeyRow> | Record<string, unknown> = {}): CreatedKeyRow {
  return { name: "forged", kind: "app", appId: "a1", sha256: sha256(key), maxUsagePoints: -1, qpm: 0, createdAt: Date.now(), revokedAt: null, ...over } as CreatedKeyRow;
}
const asKey = (url: string, path: string, key: string) => fetch(url + path, { headers: { authorization: `Bearer ${key}` } });

describe("a forged `created` notice on the Redis channel", () => {
  it("grants nothing: a key the store does not hold gets 401, as app or as admin, during the store's read and after", async () => {
    const d = await deploy();
    const appKey = "sk-forged-app-key-0001";
    const adminKey = "sk-forged-admin-key-0001";
    d.hold();
    const before = d.reads();
    await d.publish({ from: "forger", change: { change: "created", name: "forged", row: row(appKey) } });
    await d.publish({ from: "forger", change: { change: "created", name: "forged-admin", row: row(adminKey, { name: "forged-admin", kind: "admin", appId: null }) } });
    // the gateway heard both: it reads the store's keys again (held here, as a slow store would)
    await vi.waitFor(() => expect(d.reads()).toBeGreaterThanOrEqual(before + 2), { timeout: 2_000, interval: 5 });
    expect((await asKey(d.url, "/v1/models", appKey)).status).toBe(401);
    expect((await asKey(d.url, "/api/admin/keys", adminKey)).status).toBe(401);

    d.release();
    await vi.waitFor(async () => expect((await asKey(d.url, "/api/admin/keys", ADMIN_KEY)).status).toBe(200));
    expect((await asKey(d.url, "/v1/models", appKey)).status).toBe(401);
    expect((await asKey(d.url, "/api/admin/keys", adminKey)).status).toBe(401);
  });

  it("cannot make a stored key admin: a row's kind comes from the store, and a stored admin row is refused", async () => {
    const d = await deploy();
    const stored = "sk-sluice-stored-app-key-000000000000000000000000";
    expect(await d.store.createKey(row(stored, { name: "stored" }))).toBe(true);
    await d.publish({ from: "forger", change: { change: "created", name: "stored", row: row(stored, { name: "stored", kind: "admin", appId: null }) } });
    await vi.waitFor(async () => expect((await asKey(d.url, "/v1/models", stored)).status).toBe(200));
    expect((await asKey(d.url, "/api/admin/keys", stored)).status).toBe(403);

    // a row of kind admin in the store (written there by hand: the schema refuses one) is no key at all
    const planted = "sk-sluice-planted-admin-key-0000000000000000000000";
    d.planted.push(row(planted, { name: "planted", kind: "admin", appId: null }));
    expect((await asKey(d.url, "/api/admin/keys", planted)).status).toBe(401);
    await d.publish({ from: "forger", change: { change: "created", name: "planted" } });
    expect((await asKey(d.url, "/api/admin/keys", planted)).status).toBe(401);
  });
});
