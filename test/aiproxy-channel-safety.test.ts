// What an admin key may not do through FastGPT's AI Proxy API (docs/fastgpt.md#channel-writes): send a
// channel's key to a new server, give a channel a name config.json holds, or learn anything of a path
// before its key is checked (issue 36). Real gateways on 127.0.0.1, a real model server and a real
// "other" server that answers every request with the headers it was sent.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../src/config/load.js";
import { ROUTES } from "../src/routes.js";
import { APP_KEY, CHANNEL_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-aiproxy-admin-key-0001";
const NEW_KEY = "key-given-for-the-new-host-0003";

/** A server that answers every request 200 with the headers it was sent (as a hostile host would). */
async function startEchoServer() {
  const seen: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? "", headers: req.headers });
    req.resume();
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data: [], headers: req.headers }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

function call(base: string, method: string, path: string, body?: unknown, key: string | null = ADMIN_KEY) {
  return fetch(base + path, {
    method,
    headers: { ...(key && { authorization: `Bearer ${key}` }), ...(body !== undefined && { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
async function envelope(res: Response) {
  const text = await res.text();
  return { status: res.status, text, ...(JSON.parse(text) as { success: boolean; message?: string; data?: Record<string, unknown> }) };
}

function config(upstream: string, channel: Record<string, unknown> = {}) {
  const base = coreConfig(upstream) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  base.apiKeys.push({ name: "fastgpt", kind: "admin", key: ADMIN_KEY });
  base.channels[0] = { ...base.channels[0], healthCheck: { intervalMs: 0 }, ...channel };
  return base;
}

let upstream: Upstream;
let other: Awaited<ReturnType<typeof startEchoServer>>;
beforeAll(async () => {
  upstream = await startUpstream();
  other = await startEchoServer();
});
afterAll(async () => {
  await upstream?.close();
  await other?.close();
});
const started: StartedGateway[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((g) => g.close()));
  upstream.reset();
  other.seen.length = 0;
});
async function gateway(raw: Record<string, unknown>, opts: Parameters<typeof startGateway>[1] = {}): Promise<StartedGateway> {
  const g = await startGateway(raw, opts);
  started.push(g);
  return g;
}

describe("a channel's key and a new base_url", () => {
  it("refuses a write that moves a keyed channel to another server and keeps its key; the key goes nowhere new", async () => {
    // health check and engine scrape fast, so a key sent to the new host would show at once
    const g = await gateway(config(upstream.url, { healthCheck: { intervalMs: 50 }, engineMetrics: { url: "auto", intervalMs: 100 } }));
    // the same server under another path keeps the key
    expect(await envelope(await call(g.url, "PUT", "/api/channel/1", { base_url: `${upstream.url}/v1`, key: "********" }))).toMatchObject({ status: 200, success: true });
    expect((await chat(g.url, { model: "m1", messages: [userMessage("hi")] })).status).toBe(200);
    expect(upstream.last().headers.authorization).toBe(`Bearer ${CHANNEL_KEY}`);

    // Before (issue 36): these PUTs answered 200; 269 ms later the health check (/v1/models) and at
    // 286 ms the scrape (/metrics) sent `Bearer channel-secret-key-0001` to the new host, and the
    // test's success body echoed it back.
    for (const body of [{ base_url: other.url, key: "********" }, { base_url: other.url }, { base_url: other.url.replace("127.0.0.1", "localhost") }]) {
      const refused = await envelope(await call(g.url, "PUT", "/api/channel/1", body));
      expect(refused, JSON.stringify(body)).toMatchObject({ status: 400, success: false });
      expect(refused.message).toMatch(/^key: a base_url on another server/);
      expect(refused.text).not.toContain(CHANNEL_KEY);
    }
    const test = await envelope(await call(g.url, "GET", "/api/channel/1/test/m1?success_body=true"));
    expect(test).toMatchObject({ success: true, data: { code: 200 } });
    expect(test.text).not.toContain(CHANNEL_KEY);
    expect(other.seen).toEqual([]);

    // "" drops the key: the new host is called, without one
    expect(await envelope(await call(g.url, "PUT", "/api/channel/1", { base_url: other.url, key: "" }))).toMatchObject({ status: 200, success: true, data: { key: "" } });
    await vi.waitFor(() => expect(other.seen.map((s) => s.path)).toEqual(expect.arrayContaining(["/v1/models", "/metrics"])), { timeout: 2_500, interval: 10 });
    expect(other.seen.filter((s) => s.headers.authorization !== undefined)).toEqual([]);
  });

  it("redacts the channel key in the test's success body as in its error body", async () => {
    const g = await gateway(config(upstream.url));
    expect(await envelope(await call(g.url, "PUT", "/api/channel/1", { base_url: other.url, key: NEW_KEY }))).toMatchObject({ status: 200, data: { key: "********" } });
    // Before: the success body held `"authorization":"Bearer key-given-for-the-new-host-0003"`.
    const test = await envelope(await call(g.url, "GET", "/api/channel/1/test/m1?success_body=true"));
    expect(test).toMatchObject({ success: true, data: { code: 200 } });
    expect(other.seen.at(-1)!.headers.authorization).toBe(`Bearer ${NEW_KEY}`);
    expect(test.text).not.toContain(NEW_KEY);
    expect(JSON.parse(test.data!.response as string)).toMatchObject({ headers: { authorization: "Bearer [redacted]" } });
  });
});

describe("channel names are unique across config.json, the API and tombstones", () => {
  it("refuses a config channel's name while it is tombstoned or renamed, so dropping its override leaves one channel of the name", async () => {
    const g = await gateway(config(upstream.url));
    expect((await call(g.url, "DELETE", "/api/channel/1")).status).toBe(200);
    // Before (issue 36): 200, and once the tombstone was dropped two channels were named "up" and
    // every later write answered 400 `channels.2.name: duplicate channel name`.
    expect(await envelope(await call(g.url, "POST", "/api/channel/", { type: 1, name: "up", base_url: upstream.url, models: ["m1"] }))).toMatchObject({ status: 409, message: "channel name up is taken" });
    expect(await envelope(await call(g.url, "POST", "/api/channel/", { type: 1, name: "third", base_url: upstream.url, models: ["m1"] }))).toMatchObject({ status: 200, data: { id: 3 } });
    expect(await envelope(await call(g.url, "PUT", "/api/channel/3", { name: "up" }))).toMatchObject({ status: 409, message: "channel name up is taken" });
    expect((await call(g.url, "DELETE", "/api/admin/channels/up/override")).status).toBe(200);
    expect(await envelope(await call(g.url, "PUT", "/api/channel/3", { priority: 2 }))).toMatchObject({ status: 200, success: true });
    // a config channel renamed through the API: its old name stays its own, nobody else's
    expect(await envelope(await call(g.url, "PUT", "/api/channel/1", { name: "renamed" }))).toMatchObject({ status: 200, data: { name: "renamed" } });
    expect(await envelope(await call(g.url, "PUT", "/api/channel/3", { name: "up" }))).toMatchObject({ status: 409 });
    expect(await envelope(await call(g.url, "PUT", "/api/channel/1", { name: "up" }))).toMatchObject({ status: 200, data: { name: "up" } });
    const names = ((await envelope(await call(g.url, "GET", "/api/channels/all"))).data as unknown as Array<{ name: string }>).map((c) => c.name);
    expect(names).toEqual(["up", "demo", "third"]);
  });

  it("refuses a reload that gives config.json a channel of an API channel's name", async () => {
    let next = config(upstream.url);
    const g = await gateway(config(upstream.url), { loadConfig: () => parseConfig({ ...next, store: { driver: "memory" }, server: { log: { level: "silent" } } }) });
    expect((await call(g.url, "POST", "/api/channel/", { type: 1, name: "third", base_url: upstream.url, models: ["m1"] })).status).toBe(200);
    next = config(upstream.url);
    next.channels.push({ name: "third", baseUrl: upstream.url, models: ["m1"], healthCheck: { intervalMs: 0 } });
    expect(await g.gateway.reload()).toEqual({ ok: false, errors: ['channels: "third" is also the name of a channel created through the AI Proxy API: rename one of them'] });
    expect(((await envelope(await call(g.url, "GET", "/api/channels/all"))).data as unknown as unknown[]).length).toBe(3);
  });
});

describe("every admin route asks for a key first", () => {
  /** a path of the route, its parameters filled in */
  const concrete = (path: string) => path.replace("**:model", "m1").replace("**", "x").replace(":id", "1").replace(":name", "up").replace(":group", "g1");
  const adminRoutes = ROUTES.filter((r) => r.label === "aiproxy" || r.paths.some((p) => p.startsWith("/api/admin/")));

  it("answers 401 without a key and 403 with an app key on every path of the AI Proxy and operations APIs, served or not", async () => {
    const g = await gateway(config(upstream.url));
    const seen: string[] = [];
    for (const route of adminRoutes)
      for (const path of route.paths) {
        const method = route.method === "ALL" ? "GET" : route.method;
        const body = method === "GET" || method === "DELETE" ? undefined : {};
        seen.push(`${method} ${concrete(path)} ${(await call(g.url, method, concrete(path), body, null)).status} ${(await call(g.url, method, concrete(path), body, APP_KEY)).status}`);
      }
    // Before (issue 36): the member paths answered 501 and the unknown ones 404 without a key.
    expect(seen.filter((s) => !s.endsWith(" 401 403"))).toEqual([]);
    expect(seen.length).toBeGreaterThan(40);
    // with the admin key, what is not served says so
    expect(await envelope(await call(g.url, "GET", "/api/group_channel/3"))).toMatchObject({ status: 501, message: "member (group) channels are not supported by Sluice" });
    expect(await envelope(await call(g.url, "GET", "/api/channels/nothing"))).toMatchObject({ status: 404, message: "not found" });
  });
});
