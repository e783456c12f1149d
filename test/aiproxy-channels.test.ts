// FastGPT's model pages on Sluice (docs/fastgpt.md): FastGPT's AI Proxy client calls replayed as its
// code sends them — the browser's pass-through (projects/app/src/web/core/ai/channel.ts) and its
// server's client (packages/service/thirdProvider/aiproxy/{channel,client}.ts) — against a real
// gateway, the answers parsed with FastGPT's own zod schemas; then two gateways on one Redis (one
// SQLite store, or PostgreSQL), where a write on one is served by the other within a second.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createRedisClusterState } from "../src/cluster/redis.js";
import { parseConfig } from "../src/config/load.js";
import { createGateway, type Gateway } from "../src/gateway.js";
import { createHttpServer } from "../src/http/server.js";
import { createStore } from "../src/store/index.js";
import type { Store } from "../src/store/types.js";
import { APP_KEY, CHANNEL_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { usePostgres } from "./support/postgres.js";
import { useRedis } from "./support/redis.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-aiproxy-admin-key-0001";
const SECOND_KEY = "second-channel-key-0002";

// FastGPT's packages/service/thirdProvider/aiproxy/channel.ts, as its server parses the answers
const AIProxyChannelSchema = z
  .object({
    id: z.number().int().positive(),
    models: z.array(z.string()),
    type: z.number().int(),
    name: z.string(),
    base_url: z.string().optional(),
    proxy_url: z.string().nullable().optional(),
    model_mapping: z.record(z.string(), z.unknown()).nullable().optional(),
    configs: z.record(z.string(), z.unknown()).nullable().optional(),
    key: z.string().optional(),
    status: z.number().int().optional(),
    priority: z.number().optional(),
    sets: z.array(z.string()).nullable().optional(),
    enabled_auto_balance_check: z.boolean().optional(),
    balance_threshold: z.number().optional(),
    skip_tls_verify: z.boolean().optional(),
    enabled_no_permission_ban: z.boolean().optional(),
    warn_error_rate: z.number().optional(),
    max_error_rate: z.number().optional(),
    created_at: z.number().optional(),
  })
  .passthrough();
const AIProxyChannelListResponseSchema = z.object({ success: z.literal(true), data: z.array(AIProxyChannelSchema) });
const AIProxyMutationResponseSchema = z.object({ success: z.literal(true) });
type AIProxyChannel = z.infer<typeof AIProxyChannelSchema>;

/** FastGPT's getChannelUpdateData: the whole record it read, sent back with new models. */
const getChannelUpdateData = (channel: AIProxyChannel, models: string[]) => ({
  type: channel.type,
  name: channel.name,
  base_url: channel.base_url,
  proxy_url: channel.proxy_url,
  model_mapping: channel.model_mapping,
  configs: channel.configs,
  key: channel.key,
  status: channel.status,
  priority: channel.priority,
  sets: channel.sets,
  enabled_auto_balance_check: channel.enabled_auto_balance_check,
  skip_tls_verify: channel.skip_tls_verify,
  enabled_no_permission_ban: channel.enabled_no_permission_ban,
  warn_error_rate: channel.warn_error_rate,
  max_error_rate: channel.max_error_rate,
  models,
});

/** FastGPT's server client: `${baseUrl}${url}`, the token as a bearer, the JSON body (axios). */
function call(base: string, method: string, path: string, body?: unknown, key: string | null = ADMIN_KEY): Promise<Response> {
  return fetch(base + path, {
    method,
    headers: { ...(key && { authorization: `Bearer ${key}` }), ...(body !== undefined && { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
/** FastGPT's browser client: content-type always, GET params in the query (axios `params`). */
function web(base: string, method: string, path: string, data: Record<string, unknown> = {}): Promise<Response> {
  const write = method === "POST" || method === "PUT";
  const query = write ? "" : `?${new URLSearchParams(Object.entries(data).map(([k, v]) => [k, String(v)]))}`;
  return fetch(`${base}${path}${query === "?" ? "" : query}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_KEY}` },
    body: write ? JSON.stringify(data) : undefined,
  });
}
async function envelope(res: Response): Promise<{ status: number; success: boolean; message?: string; data?: unknown; text: string }> {
  const text = await res.text();
  return { status: res.status, text, ...(JSON.parse(text) as { success: boolean; message?: string; data?: unknown }) };
}
async function channels(base: string): Promise<AIProxyChannel[]> {
  return AIProxyChannelListResponseSchema.parse(await (await call(base, "GET", "/api/channels/all")).json()).data;
}

function config(upstream: string, extra: Record<string, unknown> = {}) {
  const base = coreConfig(upstream) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  base.apiKeys.push({ name: "fastgpt", kind: "admin", key: ADMIN_KEY });
  for (const c of base.channels) c.healthCheck = { intervalMs: 0 };
  return { ...base, ...extra };
}

let upstream: Upstream;
let second: Upstream;
beforeAll(async () => {
  upstream = await startUpstream();
  second = await startUpstream();
});
afterAll(async () => {
  await upstream?.close();
  await second?.close();
});
const started: StartedGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((g) => g.close()));
  upstream.reset();
  second.reset();
});
async function gateway(extra: Record<string, unknown> = {}): Promise<StartedGateway> {
  const g = await startGateway(config(upstream.url, extra));
  started.push(g);
  return g;
}

describe("the AI Proxy admin API: auth and envelope", () => {
  it("answers 401 without a key or with an unknown one, 403 for a key that is not an admin key, in aiproxy's envelope", async () => {
    const g = await gateway();
    expect(await envelope(await call(g.url, "GET", "/api/channels/all", undefined, null))).toMatchObject({ status: 401, success: false, message: "unauthorized, no access token provided" });
    expect(await envelope(await call(g.url, "GET", "/api/channels/all", undefined, "sk-nobody-knows-this-1"))).toMatchObject({ status: 401, success: false, message: "unauthorized, invalid access token" });
    expect(await envelope(await call(g.url, "GET", "/api/channels/all", undefined, APP_KEY))).toMatchObject({ status: 403, success: false, message: "admin key required" });
  });

  it("answers 501 on the member-channel paths and 404 not found on unknown paths under aiproxy's prefixes", async () => {
    const g = await gateway();
    for (const path of ["/api/group/fastgpt/channels/?page=1", "/api/log/g1/group_channel/search", "/api/group_channels/", "/api/group_channel/3"])
      expect(await envelope(await call(g.url, "GET", path))).toMatchObject({ status: 501, success: false, message: "member (group) channels are not supported by Sluice" });
    for (const path of ["/api/channels/nothing", "/api/channel/1/nothing/here"]) expect(await envelope(await call(g.url, "GET", path))).toMatchObject({ status: 404, success: false, message: "not found" });
  });
});

describe("the channel table as FastGPT reads it", () => {
  it("lists config.json's channels with stable ids, type 1, the key masked and aiproxy's fields, parsed by FastGPT's schema", async () => {
    const g = await gateway();
    // the browser's getChannelList: GET /channels/all with page=1&perPage=10
    const res = await envelope(await web(g.url, "GET", "/api/channels/all", { page: 1, perPage: 10 }));
    expect(res.text).not.toContain(CHANNEL_KEY);
    const list = AIProxyChannelListResponseSchema.parse(res).data;
    expect(list.map((c) => [c.id, c.name, c.type, c.key, c.base_url, c.status, c.priority])).toEqual([
      [1, "up", 1, "********", upstream.url, 1, 1],
      [2, "demo", 1, "", "", 1, 1],
    ]);
    expect(list[0]).toMatchObject({ model_mapping: {}, proxy_url: "", balance: 0, sluice: { source: "config", overridden: false, tier: 0, breaker: "closed" } });
    // the server's paginated list, one channel and the protocol list
    expect((await envelope(await call(g.url, "GET", "/api/channels/?page=2&per_page=1"))).data).toMatchObject({ channels: [{ id: 2, name: "demo" }], total: 2 });
    expect((await envelope(await call(g.url, "GET", "/api/channel/1"))).data).toMatchObject({ id: 1, name: "up", key: "********" });
    expect(await envelope(await call(g.url, "GET", "/api/channel/9"))).toMatchObject({ status: 404, success: false, message: "record not found: channel 9" });
    expect((await envelope(await call(g.url, "GET", "/api/channels/type_metas"))).data).toEqual({ "1": { name: "OpenAI-compatible", keyHelp: "", defaultBaseUrl: "http://127.0.0.1:6006", readme: "" } });
  });

  it("keeps the ids config.json gives and numbers the others past them", async () => {
    const g = await gateway({ channels: [{ name: "up", id: 7, baseUrl: upstream.url, models: ["m1", "m-vision"], healthCheck: { intervalMs: 0 } }, { name: "demo", type: "echo", models: ["echo"] }] });
    expect((await channels(g.url)).map((c) => [c.id, c.name])).toEqual([
      [7, "up"],
      [8, "demo"],
    ]);
  });
});

describe("channel writes as FastGPT makes them", () => {
  it("creates a channel from the browser's form, serves its models at once, and keeps its key out of every answer", async () => {
    const g = await gateway();
    const created = await envelope(await web(g.url, "POST", "/api/channel", { type: 1, name: "second", base_url: second.url, models: ["m1"], model_mapping: {}, key: SECOND_KEY }));
    expect(created).toMatchObject({ status: 200, success: true, data: { id: 3, name: "second", key: "********", sluice: { source: "api" } } });
    expect(created.text).not.toContain(SECOND_KEY);
    // the config channel disabled: m1 goes to the new channel, with the new channel's key
    expect(AIProxyMutationResponseSchema.parse(await (await call(g.url, "POST", "/api/channel/1/status", { status: 2 })).json())).toBeTruthy();
    expect((await chat(g.url, { model: "m1", messages: [userMessage("hi")] })).status).toBe(200);
    expect(upstream.requests).toHaveLength(0);
    expect(second.requests.at(-1)!.headers.authorization).toBe(`Bearer ${SECOND_KEY}`);
    const list = await channels(g.url);
    expect(list.map((c) => [c.id, c.status])).toEqual([
      [1, 2],
      [2, 1],
      [3, 1],
    ]);
    expect(JSON.stringify(list)).not.toContain(SECOND_KEY);
    const metrics = await (await fetch(`${g.url}/metrics`)).text();
    expect(metrics).toContain('sluice_channel_enabled{channel="up"} 0');
    expect(metrics).toContain('sluice_channel_enabled{channel="second"} 1');
    expect(metrics).toContain('sluice_channel_writes_total{op="create",outcome="ok"} 1');
    expect(metrics).toContain('sluice_channel_writes_total{op="status",outcome="ok"} 1');
    expect(metrics).not.toContain(SECOND_KEY);
  });

  it("takes FastGPT's whole-record PUT of a model binding: the masked key keeps the key, the models change", async () => {
    const g = await gateway();
    const [up] = await channels(g.url);
    const res = await call(g.url, "PUT", `/api/channel/${up!.id}`, getChannelUpdateData(up!, ["m1"]));
    AIProxyMutationResponseSchema.parse(await res.json());
    const after = (await channels(g.url))[0]!;
    expect(after).toMatchObject({ id: 1, models: ["m1"], key: "********", sluice: { overridden: true } });
    expect((await chat(g.url, { model: "m1", messages: [userMessage("hi")] })).status).toBe(200);
    expect(upstream.requests.at(-1)!.headers.authorization).toBe(`Bearer ${CHANNEL_KEY}`);
    // m-vision has no channel now: 503, not 404
    const refused = await chat(g.url, { model: "m-vision", messages: [userMessage("hi")] });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "model_unavailable", message: "no available channel for model m-vision" });
  });

  it("refuses bad writes with a fitting status and a message naming the problem, storing nothing", async () => {
    const g = await gateway();
    const cases: Array<[string, string, unknown, number, string]> = [
      ["POST", "/api/channel/", { type: 14, name: "x", models: ["m1"] }, 400, "channel type 14 is not supported: Sluice speaks to OpenAI-compatible servers (type 1)"],
      ["POST", "/api/channel/", { type: 1, name: "x", models: ["gpt-9"] }, 400, "model gpt-9 is not configured in Sluice"],
      ["POST", "/api/channel/", { type: 1, name: "x", models: ["m1"], key: "a\nb" }, 400, "key: one key per channel: a key may not hold a line break"],
      ["POST", "/api/channel/", { type: 1, name: "x", models: ["m1"], skip_tls_verify: true }, 400, "skip_tls_verify: Sluice keeps it at false"],
      ["POST", "/api/channel/", { type: 1, models: ["m1"] }, 400, "name: required"],
      ["POST", "/api/channel/", { type: 1, name: "up", models: ["m1"] }, 409, "channel name up is taken"],
      ["PUT", "/api/channel/2", { models: ["echo"] }, 403, "channel demo answers inside Sluice (type echo): it is not written through this API"],
      ["PUT", "/api/channel/5", { models: ["m1"] }, 404, "record not found: channel 5"],
      ["POST", "/api/channels/batch_delete", [1, 5], 404, "record not found: channel 5"],
      ["POST", "/api/channel/1/status", { status: 3 }, 400, "status: expected 1 (enabled) or 2 (disabled)"],
    ];
    for (const [method, path, body, status, message] of cases) expect(await envelope(await call(g.url, method, path, body)), `${method} ${path}`).toMatchObject({ status, success: false, message });
    expect((await channels(g.url)).map((c) => c.name)).toEqual(["up", "demo"]);
    expect(await (await fetch(`${g.url}/metrics`)).text()).toContain('sluice_channel_writes_total{op="create",outcome="refused"} 6');
  });

  it("refuses every write when channelWrites is false, and still changes a status", async () => {
    const g = await gateway({ channelWrites: false });
    expect(await envelope(await call(g.url, "POST", "/api/channel/", { type: 1, name: "x", models: ["m1"] }))).toMatchObject({ status: 403, message: "channel writes are off (channelWrites: false in config.json)" });
    expect(await envelope(await call(g.url, "DELETE", "/api/channel/1"))).toMatchObject({ status: 403, success: false });
    expect(await envelope(await call(g.url, "POST", "/api/channels/batch_status", { ids: [1], status: 2 }))).toMatchObject({ status: 200, success: true });
    expect((await channels(g.url))[0]!.status).toBe(2);
  });

  it("deletes config.json's channel as a tombstone: its models answer 503 without a call", async () => {
    const g = await gateway();
    expect(AIProxyMutationResponseSchema.parse(await (await call(g.url, "POST", "/api/channels/batch_delete", { ids: [1] })).json())).toBeTruthy();
    expect((await channels(g.url)).map((c) => c.name)).toEqual(["demo"]);
    expect((await chat(g.url, { model: "m1", messages: [userMessage("hi")] })).status).toBe(503);
    expect(upstream.requests).toHaveLength(0);
  });
});

describe("the channel test", () => {
  it("calls the model on that channel alone, also when it is disabled, and says what the model server answered", async () => {
    const g = await gateway();
    await call(g.url, "POST", "/api/channel/1/status", { status: 2 });
    const passed = await envelope(await call(g.url, "GET", `/api/channel/1/test/${encodeURIComponent("m1")}?success_body=true`));
    expect(passed).toMatchObject({ status: 200, success: true, data: { channel_id: 1, channel_name: "up", channel_type: 1, model: "m1", actual_model: "m1", mode: 1, success: true, code: 200 } });
    expect((passed.data as { response: string; took: number }).response).toContain("Hello from the test upstream");
    expect((passed.data as { took: number }).took).toBeGreaterThan(0);
    expect(upstream.requests.at(-1)!.body).toMatchObject({ model: "m1", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    upstream.behave({ status: 503 });
    const failed = await envelope(await call(g.url, "GET", "/api/channel/1/test/m1"));
    expect(failed).toMatchObject({ status: 200, success: false, data: { success: false, code: 503 } });
    expect(failed.message).toMatch(/^channel up \(1\) model m1: 503 /);
    expect(await envelope(await call(g.url, "GET", "/api/channel/1/test/echo"))).toMatchObject({ success: false, message: "model not supported by channel" });
    expect(await envelope(await call(g.url, "GET", "/api/channel/8/test/m1"))).toMatchObject({ success: false, message: "channel not found" });
    expect(await g.store.summarizeUsage({})).toMatchObject({ totals: { requests: 0 } });
  });
});

// ---- two gateways on one store and one Redis ----

const redis = useRedis();
const postgres = usePostgres();

/** The stores of two instances: one SQLite store both use, or a PostgreSQL pool each (as two processes have). */
const STORES: Array<[string, () => Promise<Store[]>]> = [
  ["one SQLite store", async () => {
    const store = createStore({ driver: "memory" });
    return [store, store];
  }],
  ["PostgreSQL", async () => {
    const url = await postgres.createDatabase();
    return [createStore({ driver: "postgres", url }), createStore({ driver: "postgres", url })];
  }],
];

describe.each(STORES)("two gateways on %s and one Redis", (_, openStores) => {
  let pair: Array<{ url: string; gateway: Gateway; server: Server }> = [];
  let stores: Store[] = [];
  afterEach(async () => {
    for (const { server, gateway } of pair) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await gateway.close();
    }
    await Promise.all([...new Set(stores)].map((s) => s.close()));
    pair = [];
    stores = [];
  });

  it("serve a channel written on one on the other within a second: a create, a disable, a delete", async () => {
    const text = JSON.stringify({ ...config(upstream.url), server: { log: { level: "silent" } } });
    stores = await openStores();
    const prefix = redis.prefix();
    for (const store of stores) {
      const parsed = parseConfig(JSON.parse(text));
      const state = createRedisClusterState({ url: redis.server().url, prefix, breaker: parsed.routing.breaker, log: () => {} });
      const gateway = createGateway(parsed, { store, state, loadConfig: () => parseConfig(JSON.parse(text)) });
      const server = createHttpServer(toNodeHandler(gateway.app), parsed.server);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      pair.push({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, gateway, server });
    }
    const [a, b] = pair as [(typeof pair)[0], (typeof pair)[0]];
    for (const { url } of pair) await vi.waitFor(async () => expect((await fetch(`${url}/readyz`)).status).toBe(200), { timeout: 5_000, interval: 20 });
    const within = { timeout: 1_000, interval: 10 };

    expect((await call(a.url, "POST", "/api/channel/", { type: 1, name: "second", base_url: second.url, models: ["m1"], key: SECOND_KEY })).status).toBe(200);
    await vi.waitFor(async () => expect((await channels(b.url)).map((c) => c.name)).toEqual(["up", "demo", "second"]), within);
    expect((await call(a.url, "POST", "/api/channel/1/status", { status: 2 })).status).toBe(200);
    await vi.waitFor(async () => expect((await channels(b.url))[0]!.status).toBe(2), within);
    expect((await chat(b.url, { model: "m1", messages: [userMessage("on b")] })).status).toBe(200);
    expect(second.requests).toHaveLength(1);
    expect(upstream.requests).toHaveLength(0);
    expect((await call(a.url, "DELETE", "/api/channel/3")).status).toBe(200);
    await vi.waitFor(async () => expect((await chat(b.url, { model: "m1", messages: [userMessage("gone")] })).status).toBe(503), within);
    // a reload of config.json keeps what the API wrote over it, and says which config channel it hides
    expect((await call(a.url, "PUT", "/api/channel/1", { models: ["m1"], status: 1 })).status).toBe(200);
    expect(await a.gateway.reload()).toEqual({ ok: true, hidden: ['channels: "up" is overridden through the AI Proxy API (DELETE /api/admin/channels/up/override makes it config.json\'s again)'] });
    expect((await channels(a.url))[0]).toMatchObject({ id: 1, models: ["m1"], status: 1, sluice: { overridden: true } });
    // the operations API drops the override: config.json's channel again, on both
    expect((await call(a.url, "DELETE", "/api/admin/channels/up/override")).status).toBe(200);
    expect((await call(a.url, "DELETE", "/api/admin/channels/nope/override")).status).toBe(404);
    await vi.waitFor(async () => expect((await channels(b.url))[0]).toMatchObject({ id: 1, models: ["m1", "m-vision"], sluice: { overridden: false } }), within);
  });
});
