// The keys API (docs/operations.md#keys-api, docs/api.md#keys) over real sockets: a created key chats at
// once and is shown only in the create answer; the list never holds a key or digest; a revoked key gets 401
// at once (also on a second instance sharing the cluster state); per-key qpm and budget; the 409s and 400s;
// admin keys only. A real child process on one SQLite file keeps created keys and revocations across
// restarts, and the file never holds a plain key.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createMemoryClusterState } from "../src/cluster/memory.js";
import { parseConfig } from "../src/config/load.js";
import { createGateway, type Gateway } from "../src/gateway.js";
import { createHttpServer } from "../src/http/server.js";
import { createStore } from "../src/store/index.js";
import { APP_KEY, GLOBAL_KEY, chatOk, expectError, gatewayConfig, postChat, useTempDir, user } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { SOURCE_ENTRY, createMainProcesses } from "./support/main-process.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-test-admin-key-0001";
const KEY_FORMAT = /^sk-sluice-[A-Za-z0-9_-]{32,}$/;
// m1 costs charsPointsPrice 2 per 1,000 tokens and the upstream reports 500 + 500: 2 points a chat
const POINTS_PER_CHAT = 2;

interface CreatedKey {
  name: string;
  kind: string;
  appId: string | null;
  key: string;
  createdAt: string;
}
interface ListedKey {
  name: string;
  kind: string;
  appId: string | null;
  source: "config" | "api";
  createdAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  limits: { maxUsagePoints: number; qpm: number; tpm: number; periodPoints: number; period: string };
}

/** gatewayConfig with an admin key besides its app keys (k1, k2) and global key (ops); no health
 *  checks, so the upstream sees only chats. */
function keysConfig(upstreamUrl: string, sqlitePath?: string): Record<string, unknown> {
  const raw = gatewayConfig(upstreamUrl, { sqlitePath }) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  raw.apiKeys.push({ name: "root", kind: "admin", key: ADMIN_KEY });
  for (const channel of raw.channels) channel.healthCheck = { intervalMs: 0 };
  return raw;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

function admin(url: string, method: string, path: string, body?: unknown, key: string | null = ADMIN_KEY): Promise<Response> {
  return fetch(url + path, {
    method,
    headers: { ...(key && { authorization: `Bearer ${key}` }), ...(body !== undefined && { "content-type": "application/json" }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function createKey(url: string, body: Record<string, unknown>): Promise<CreatedKey> {
  const res = await admin(url, "POST", "/api/admin/keys", body);
  const text = await res.text();
  expect(res.status, text).toBe(201);
  return JSON.parse(text) as CreatedKey;
}

async function listKeys(url: string): Promise<{ text: string; keys: ListedKey[] }> {
  const res = await admin(url, "GET", "/api/admin/keys");
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return { text, keys: (JSON.parse(text) as { keys: ListedKey[] }).keys };
}

let upstream: Upstream;

beforeAll(async () => {
  upstream = await startUpstream({ usage: { prompt_tokens: 500, completion_tokens: 500 } });
});
afterAll(() => upstream.close());

describe("keys API on one gateway", () => {
  let gw: StartedGateway;
  beforeAll(async () => {
    gw = await startGateway(keysConfig(upstream.url));
  });
  afterAll(() => gw.close());
  afterEach(() => upstream.reset());

  it("creates an app key (201, sk-sluice- and 32+ url-safe characters, not cached) that chats at once", async () => {
    const res = await admin(gw.url, "POST", "/api/admin/keys", { name: "web", kind: "app", appId: "a1" });
    expect(res.status).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const created = (await res.json()) as CreatedKey;
    expect(Object.keys(created).sort()).toEqual(["appId", "createdAt", "expiresAt", "key", "kind", "name"]);
    expect(created).toMatchObject({ name: "web", kind: "app", appId: "a1" });
    expect(created.key).toMatch(KEY_FORMAT);
    expect(Number.isNaN(Date.parse(created.createdAt))).toBe(false);

    await chatOk(gw.url, { messages: [user("hello")] }, created.key);
    expect(upstream.last().headers.authorization).not.toContain(created.key);
    const usage = await gw.store.summarizeUsage({});
    expect(usage.apps.find((a) => a.appId === "a1")?.requests).toBeGreaterThan(0);
  });

  it("lists config and created keys with source, times and lastUsedAt, never a key or digest", async () => {
    const created = await createKey(gw.url, { name: "listed", kind: "app", appId: "a2" });
    await chatOk(gw.url, { messages: [user("use it")] }, created.key);
    const { text, keys } = await listKeys(gw.url);

    for (const secret of [created.key, sha256(created.key), APP_KEY, sha256(APP_KEY), ADMIN_KEY]) expect(text).not.toContain(secret);
    for (const k of keys) expect(Object.keys(k).sort()).toEqual(["appId", "createdAt", "expiresAt", "kind", "lastUsedAt", "limits", "name", "revokedAt", "source"]);
    expect(keys.find((k) => k.name === "k1")).toMatchObject({ kind: "app", appId: "a1", source: "config", createdAt: null, revokedAt: null });
    expect(keys.find((k) => k.name === "root")).toMatchObject({ kind: "admin", appId: null, source: "config" });
    const listed = keys.find((k) => k.name === "listed")!;
    expect(listed).toMatchObject({ kind: "app", appId: "a2", source: "api", createdAt: created.createdAt, revokedAt: null });
    expect(Date.parse(listed.lastUsedAt!)).toBeGreaterThanOrEqual(Date.parse(created.createdAt));
  });

  it("lists each key's own limits, what the console shows its budgets against", async () => {
    await createKey(gw.url, { name: "limited", kind: "app", appId: "a1", maxUsagePoints: 40, qpm: 7, tpm: 900, periodPoints: 5, period: "week" });
    const { keys } = await listKeys(gw.url);
    expect(keys.find((k) => k.name === "limited")?.limits).toEqual({ maxUsagePoints: 40, qpm: 7, tpm: 900, periodPoints: 5, period: "week" });
    expect(keys.find((k) => k.name === "root")?.limits).toEqual({ maxUsagePoints: -1, qpm: 0, tpm: 0, periodPoints: -1, period: "day" });
  });

  it("revokes a created key: 401 invalid_api_key at once, listed with revokedAt, a second DELETE keeps the first time", async () => {
    const created = await createKey(gw.url, { name: "short-lived", kind: "app", appId: "a1" });
    await chatOk(gw.url, { messages: [user("before")] }, created.key);

    const res = await admin(gw.url, "DELETE", "/api/admin/keys/short-lived");
    expect(res.status).toBe(200);
    const revoked = (await res.json()) as { name: string; revokedAt: string };
    expect(revoked.name).toBe("short-lived");
    await expectError(await postChat(gw.url, { messages: [user("after")] }, created.key), 401, "invalid_api_key");
    await expectError(await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${created.key}` } }), 401, "invalid_api_key");

    const again = await admin(gw.url, "DELETE", "/api/admin/keys/short-lived");
    expect(again.status).toBe(200);
    expect(((await again.json()) as { revokedAt: string }).revokedAt).toBe(revoked.revokedAt);
    const { keys } = await listKeys(gw.url);
    expect(keys.find((k) => k.name === "short-lived")?.revokedAt).toBe(revoked.revokedAt);
  });

  it("creates a global key: it lists models and reads usage, and chat answers 403 app_key_required", async () => {
    const created = await createKey(gw.url, { name: "reporting", kind: "global" });
    expect(created.appId).toBeNull();
    const auth = { authorization: `Bearer ${created.key}` };
    expect((await fetch(`${gw.url}/api/v1/usage`, { headers: auth })).status).toBe(200);
    const models = (await (await fetch(`${gw.url}/v1/models`, { headers: auth })).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id).sort()).toEqual(["m1", "m2"]);
    await expectError(await postChat(gw.url, { messages: [user("hi")] }, created.key), 403, "app_key_required");
    await expectError(await admin(gw.url, "GET", "/api/admin/keys", undefined, created.key), 403, "admin_key_required");
  });

  it("answers 409 key_name_taken for a config key's name and for a created key's name, revoked or not", async () => {
    for (const name of ["k1", "root", "web", "short-lived"]) {
      const res = await admin(gw.url, "POST", "/api/admin/keys", { name, kind: "app", appId: "a1" });
      expect((await expectError(res, 409, "key_name_taken")).param).toBe("name");
    }
  });

  it("answers 409 key_in_config for DELETE of a config key and 404 key_not_found for an unknown name", async () => {
    await expectError(await admin(gw.url, "DELETE", "/api/admin/keys/k1"), 409, "key_in_config");
    await postChat(gw.url, { messages: [user("k1 still works")] }).then((r) => expect(r.status).toBe(200));
    await expectError(await admin(gw.url, "DELETE", "/api/admin/keys/nobody"), 404, "key_not_found");
  });

  it("answers 400 naming the field for every invalid create body", async () => {
    const cases: Array<[unknown, string | null]> = [
      [{ kind: "app", appId: "a1" }, "name"],
      [{ name: "has space", kind: "app", appId: "a1" }, "name"],
      [{ name: "x".repeat(65), kind: "global" }, "name"],
      [{ name: "n1", kind: "admin" }, "kind"],
      [{ name: "n1" }, "kind"],
      [{ name: "n1", kind: "app" }, "appId"],
      [{ name: "n1", kind: "global", appId: "a1" }, "appId"],
      [{ name: "n1", kind: "app", appId: "no-such-app" }, "appId"],
      [{ name: "n1", kind: "app", appId: "a1", qpm: 1.5 }, "qpm"],
      [{ name: "n1", kind: "app", appId: "a1", qpm: "10" }, "qpm"],
      [{ name: "n1", kind: "app", appId: "a1", maxUsagePoints: -2 }, "maxUsagePoints"],
      [{ name: "n1", kind: "app", appId: "a1", key: "sk-my-own-choice" }, "key"],
      [[1, 2], null],
    ];
    for (const [body, param] of cases) {
      const error = await expectError(await admin(gw.url, "POST", "/api/admin/keys", body), 400, "invalid_request");
      expect(error.param, JSON.stringify(body)).toBe(param);
      if (param) expect(error.message).toContain(param);
    }
    await expectError(await admin(gw.url, "POST", "/api/admin/keys", "{not json"), 400, "invalid_json");
    const { keys } = await listKeys(gw.url);
    expect(keys.map((k) => k.name)).not.toContain("n1");
  });

  it("words its 400s as every request body's 400 is worded (one formatter: json/issues.ts)", async () => {
    // before, the keys API's own words: "name: is required", "qpm: expected a number",
    // "qpm: expected a whole number", "maxUsagePoints: expected -1 (no budget) or more", "body: expected a JSON object"
    const cases: Array<[unknown, string]> = [
      [{ kind: "app", appId: "a1" }, "name is required"],
      [{ name: "n1", kind: "app", appId: "a1", qpm: "10" }, "qpm: expected a number, got a string"],
      [{ name: "n1", kind: "app", appId: "a1", qpm: 1.5 }, "qpm: expected an integer, got 1.5"],
      [{ name: "n1", kind: "app", appId: "a1", maxUsagePoints: -2 }, "maxUsagePoints: must be at least -1"],
      [{ name: "n1", kind: "admin" }, 'kind: must be "app" or "global"'],
      [{ name: "n1", kind: "app" }, "appId: an app key needs appId"],
      [{ name: "n1", kind: "app", appId: "a1", key: "sk-my-own-choice" }, "key: unknown field"],
      [[1, 2], "Request body must be a JSON object, got an array."],
    ];
    for (const [body, message] of cases) {
      const error = await expectError(await admin(gw.url, "POST", "/api/admin/keys", body), 400, "invalid_request");
      expect(error.message, JSON.stringify(body)).toBe(message);
    }
    // the same mistake in a chat body is told in the same words
    const chat = await expectError(await postChat(gw.url, { messages: [user("hi")], max_tokens: 1.5 }), 400, "invalid_request");
    expect(chat.message).toBe("max_tokens: expected an integer, got 1.5");
  });

  it("answers 401 without a key or with an unknown one, and 403 admin_key_required to app and global keys", async () => {
    await expectError(await admin(gw.url, "GET", "/api/admin/keys", undefined, null), 401, "missing_api_key");
    await expectError(await admin(gw.url, "GET", "/api/admin/keys", undefined, "sk-sluice-not-a-key-at-all-000000000000"), 401, "invalid_api_key");
    for (const key of [APP_KEY, GLOBAL_KEY]) {
      await expectError(await admin(gw.url, "POST", "/api/admin/keys", { name: "sneaky", kind: "global" }, key), 403, "admin_key_required");
      await expectError(await admin(gw.url, "GET", "/api/admin/keys", undefined, key), 403, "admin_key_required");
      await expectError(await admin(gw.url, "DELETE", "/api/admin/keys/web", undefined, key), 403, "admin_key_required");
    }
    await chatOk(gw.url, { messages: [user("web still works")] }, (await createKey(gw.url, { name: "probe", kind: "app", appId: "a1" })).key);
  });

  it("enforces a created key's qpm: 429 rate_limit_exceeded with Retry-After past it", async () => {
    const created = await createKey(gw.url, { name: "slow", kind: "app", appId: "a1", qpm: 2 });
    await chatOk(gw.url, { messages: [user("1")] }, created.key);
    await chatOk(gw.url, { messages: [user("2")] }, created.key);
    const res = await postChat(gw.url, { messages: [user("3")] }, created.key);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await expectError(res, 429, "rate_limit_exceeded")).message).toContain("API key slow");
    // the app's other keys are not limited by it
    await chatOk(gw.url, { messages: [user("other key")] });
  });

  it("enforces a created key's maxUsagePoints: spend scope key:<name>, 429 insufficient_quota once it is spent", async () => {
    const created = await createKey(gw.url, { name: "budgeted", kind: "app", appId: "a1", maxUsagePoints: 4 });
    await chatOk(gw.url, { messages: [user("1")] }, created.key);
    await chatOk(gw.url, { messages: [user("2")] }, created.key);
    expect(await gw.store.getSpent("key:budgeted")).toBe(2 * POINTS_PER_CHAT);
    const requests = upstream.requests.length;
    await expectError(await postChat(gw.url, { messages: [user("3")] }, created.key), 429, "insufficient_quota");
    expect(upstream.requests).toHaveLength(requests);
  });
});

describe("a key made on another instance whose notice has not arrived", () => {
  it("is found in the shared store before a 401: a load balancer may send its first use anywhere", async () => {
    // one store, but each gateway its own cluster state: the key-change notice never reaches B
    const store = createStore({ driver: "memory" });
    const text = JSON.stringify({ ...keysConfig(upstream.url), server: { log: { level: "silent" } } });
    const started: Array<{ gateway: Gateway; server: Server; url: string }> = [];
    try {
      for (let i = 0; i < 2; i++) {
        const load = () => parseConfig(JSON.parse(text));
        const state = createMemoryClusterState({ failures: 5, cooldownMs: 30_000 });
        const gateway = createGateway(load(), { store, state, loadConfig: load });
        const server = createHttpServer(toNodeHandler(gateway.app), load().server);
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
        started.push({ gateway, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      }
      const [a, b] = started as [(typeof started)[0], (typeof started)[0]];
      await chatOk(b.url, { messages: [user("warm")] }); // B has read the store's keys before the key exists
      const created = await createKey(a.url, { name: "unheard", kind: "app", appId: "a1" });
      await chatOk(b.url, { messages: [user("first use on b")] }, created.key);
      // an unknown key in the created format is still refused after the look in the store
      await expectError(await postChat(b.url, { messages: [user("x")] }, "sk-sluice-" + "x".repeat(43)), 401, "invalid_api_key");
    } finally {
      for (const { gateway, server } of started) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await gateway.close();
      }
      await store.close();
    }
  });
});

describe("unknown keys in the created format", () => {
  it("cost one lookup by digest each, never a read of every key, and the same one again none (issue 36, check c; before: 40 unknown keys, 40 reads of every key)", async () => {
    const inner = createStore({ driver: "memory" });
    const calls = { lists: 0, finds: 0 };
    const store = {
      ...inner,
      listCreatedKeys: () => (calls.lists++, inner.listCreatedKeys()),
      findCreatedKey: (digest: string) => (calls.finds++, inner.findCreatedKey(digest)),
    };
    const gw = await startGateway({ ...keysConfig(upstream.url), server: { log: { level: "silent" } } }, { store });
    try {
      const held = await createKey(gw.url, { name: "held", kind: "app", appId: "a1" });
      await chatOk(gw.url, { messages: [user("warm")] }, held.key);
      const before = { ...calls };
      const unknown = Array.from({ length: 20 }, (_, i) => `sk-sluice-unknown-${String(i).padStart(2, "0")}-${"x".repeat(30)}`);
      for (const key of [...unknown, ...unknown]) await expectError(await postChat(gw.url, { messages: [user("x")] }, key), 401, "invalid_api_key");
      expect(calls.lists - before.lists).toBe(0);
      expect(calls.finds - before.finds).toBe(20);
      // a key the store holds and this instance had not heard of is still found by its digest
      const unheard = "sk-sluice-written-elsewhere-" + "y".repeat(30);
      await inner.createKey({ name: "elsewhere", kind: "app", appId: "a1", sha256: sha256(unheard), maxUsagePoints: -1, qpm: 0, tpm: 0, periodPoints: -1, period: "day", expiresAt: null, createdAt: Date.now(), revokedAt: null });
      await chatOk(gw.url, { messages: [user("first use")] }, unheard);
    } finally {
      await gw.close();
      await inner.close();
    }
  });
});

describe("keys API across instances sharing the cluster state and store", () => {
  const instances: Array<{ gateway: Gateway; server: Server; url: string }> = [];
  const store = createStore({ driver: "memory" });
  const state = createMemoryClusterState({ failures: 5, cooldownMs: 30_000 });
  let configText = "";

  beforeAll(async () => {
    configText = JSON.stringify({ ...keysConfig(upstream.url), server: { log: { level: "silent" } } });
    for (let i = 0; i < 2; i++) {
      const load = () => parseConfig(JSON.parse(configText));
      const gateway = createGateway(load(), { store, state, loadConfig: load });
      const server = createHttpServer(toNodeHandler(gateway.app), load().server);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      instances.push({ gateway, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    }
  });
  afterAll(async () => {
    for (const { gateway, server } of instances) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await gateway.close();
    }
    await store.close();
  });

  it("a key created on one instance chats on the other; revoked on the other, the first refuses it at once", async () => {
    const [a, b] = instances as [(typeof instances)[0], (typeof instances)[0]];
    const created = await createKey(a.url, { name: "shared", kind: "app", appId: "a1" });
    await chatOk(b.url, { messages: [user("on b")] }, created.key);

    expect((await admin(b.url, "DELETE", "/api/admin/keys/shared")).status).toBe(200);
    await expectError(await postChat(a.url, { messages: [user("on a")] }, created.key), 401, "invalid_api_key");
    await expectError(await postChat(b.url, { messages: [user("on b")] }, created.key), 401, "invalid_api_key");
  });

  it("a reload keeps created keys, and a key whose app a reload removed answers 403 app_not_found", async () => {
    const [a] = instances as [(typeof instances)[0]];
    const created = await createKey(a.url, { name: "orphan", kind: "app", appId: "a2" });
    const raw = JSON.parse(configText) as { apps: Array<{ id: string }>; apiKeys: Array<{ appId?: string }> };
    raw.apps = raw.apps.filter((app) => app.id !== "a2");
    raw.apiKeys = raw.apiKeys.filter((k) => k.appId !== "a2");
    configText = JSON.stringify(raw);
    expect(await a.gateway.reload()).toEqual({ ok: true });

    const models = (await (await fetch(`${a.url}/v1/models`, { headers: { authorization: `Bearer ${created.key}` } })).json()) as { data: unknown[] };
    expect(models.data).toEqual([]);
    await expectError(await postChat(a.url, { messages: [user("where is my app")] }, created.key), 403, "app_not_found");
    const kept = await createKey(a.url, { name: "after-reload", kind: "app", appId: "a1" });
    await chatOk(a.url, { messages: [user("fine")] }, kept.key);
  });
});

describe("created keys in a real gateway process on a SQLite file", () => {
  const tmp = useTempDir("sluice-keys-api-");
  const processes = createMainProcesses();
  afterEach(() => processes.killAll());

  it("survive restarts, revocations too, and the database file holds only their sha256", { timeout: 60_000 }, async () => {
    const dbPath = tmp.file("keys.db");
    const configPath = tmp.file("config.json");
    writeFileSync(configPath, JSON.stringify(keysConfig(upstream.url, dbPath)));
    const start = () => processes.startMain(SOURCE_ENTRY, ["--config", configPath]);
    const stop = async (child: Awaited<ReturnType<typeof start>>) => {
      child.proc.kill("SIGTERM");
      expect(await child.exited).toBe(0);
      return child.stdout() + child.stderr();
    };

    // 1. Create two keys and use one; a graceful stop writes lastUsedAt.
    const first = await start();
    const kept = await createKey(first.url, { name: "kept", kind: "app", appId: "a1", qpm: 100 });
    const doomed = await createKey(first.url, { name: "doomed", kind: "app", appId: "a2" });
    await chatOk(first.url, { messages: [user("before the restart")] }, kept.key);
    const firstOutput = await stop(first);

    // 2. After a restart the list remembers when "kept" was last used, and both keys work.
    const second = await start();
    const { keys } = await listKeys(second.url);
    expect(keys.find((k) => k.name === "kept")).toMatchObject({ source: "api", createdAt: kept.createdAt, revokedAt: null });
    expect(keys.find((k) => k.name === "kept")?.lastUsedAt).not.toBeNull();
    expect(keys.find((k) => k.name === "doomed")?.lastUsedAt).toBeNull();
    await chatOk(second.url, { messages: [user("after the restart")] }, kept.key);
    await chatOk(second.url, { messages: [user("doomed, still alive")] }, doomed.key);
    expect((await admin(second.url, "DELETE", "/api/admin/keys/doomed")).status).toBe(200);
    await expectError(await postChat(second.url, { messages: [user("revoked")] }, doomed.key), 401, "invalid_api_key");
    const secondOutput = await stop(second);

    // 3. The revocation survives the next restart; the name stays taken.
    const third = await start();
    await expectError(await postChat(third.url, { messages: [user("revoked still")] }, doomed.key), 401, "invalid_api_key");
    await chatOk(third.url, { messages: [user("kept still")] }, kept.key);
    await expectError(await admin(third.url, "POST", "/api/admin/keys", { name: "doomed", kind: "global" }), 409, "key_name_taken");
    const thirdOutput = await stop(third);

    // 4. The file (and any write-ahead log beside it) holds digests, never a key; nor does any log line.
    const bytes = [dbPath, `${dbPath}-wal`].filter(existsSync).map((p) => readFileSync(p).toString("latin1")).join("");
    for (const { key } of [kept, doomed]) {
      expect(bytes).not.toContain(key);
      expect(bytes).not.toContain(key.slice("sk-sluice-".length));
      expect(bytes).toContain(sha256(key));
      expect(firstOutput + secondOutput + thirdOutput).not.toContain(key);
    }
  });
});
