// Live reload (docs/operations.md#reload): validate, swap atomically, requests in flight finish on the
// config they started with; an invalid file changes nothing and is counted. And the operations API
// (docs/operations.md#operations-api).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toNodeHandler } from "h3/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfigFile } from "../src/config/load.js";
import { createGateway, type Gateway } from "../src/gateway.js";
import { createStore } from "../src/store/index.js";
import type { Store } from "../src/store/types.js";
import { chat, userMessage } from "./support/core-config.js";
import { BUILT_ENTRY, createMainProcesses } from "./support/main-process.js";
import { parseSse } from "./support/sse.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN = "sk-reload-admin-0001";
const APP = "sk-reload-app-0001";
const NEW_APP = "sk-reload-new-app-0001";

let a: Upstream;
let b: Upstream;
let dir: string;
let path: string;
let gateway: Gateway;
let store: Store;
let server: Server;
let url: string;

function writeConfig(channelUrl: string, extraKeys: Record<string, unknown>[] = [], raw?: string, routing?: Record<string, unknown>) {
  writeFileSync(path, raw ?? JSON.stringify({
    server: { log: { level: "silent" } },
    ...(routing ? { routing } : {}),
    store: { driver: "memory" },
    channels: [{ name: "main", baseUrl: channelUrl, models: ["m1"], healthCheck: { intervalMs: 0 } }],
    llmModels: [{ model: "m1", maxContext: 4000, maxResponse: 100 }],
    apps: [{ id: "app", model: "m1" }],
    apiKeys: [
      { name: "admin", kind: "admin", key: ADMIN },
      { name: "app", kind: "app", appId: "app", key: APP },
      ...extraKeys,
    ],
  }));
}

const reload = () => fetch(`${url}/api/admin/reload`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` } });

beforeAll(async () => {
  [a, b] = await Promise.all([startUpstream(), startUpstream()]);
  dir = mkdtempSync(join(tmpdir(), "sluice-reload-"));
  path = join(dir, "config.json");
  writeConfig(a.url);
  const config = loadConfigFile(path);
  store = createStore(config.store);
  gateway = createGateway(config, { store, loadConfig: () => loadConfigFile(path) });
  server = createServer(toNodeHandler(gateway.app));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await gateway.close();
  await store.close();
  await Promise.all([a.close(), b.close()]);
  rmSync(dir, { recursive: true, force: true });
});

describe("reload", () => {
  it("swaps in a valid config while a stream started on the old one finishes on it", async () => {
    a.behave({ chunks: 10, chunkDelayMs: 40 });
    const inFlight = chat(url, { messages: [userMessage("long")], stream: true }, APP);
    await a.waitForRequests(1);

    writeConfig(b.url, [{ name: "new-app", kind: "app", appId: "app", key: NEW_APP }]);
    const res = await reload();
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });

    // the new key works and goes to the new channel
    expect((await chat(url, { messages: [userMessage("new")] }, NEW_APP)).status).toBe(200);
    expect(b.requests).toHaveLength(1);
    // the stream that started before the reload ends whole, from the old channel
    const frames = parseSse(await (await inFlight).text());
    expect(frames.at(-1)!.data).toBe("[DONE]");
    expect(a.requests).toHaveLength(1);
  });

  it("keeps the running config when the file is invalid, lists every problem and counts it", async () => {
    writeConfig(b.url, [], JSON.stringify({ channels: [], llmModels: [], apikeys: [] }));
    const res = await reload();
    expect(res.status).toBe(422);
    const body = (await res.json()) as { ok: boolean; errors: string[] };
    expect(body.ok).toBe(false);
    expect(body.errors.length).toBeGreaterThanOrEqual(2);
    // still serving on the last good config
    expect((await chat(url, { messages: [userMessage("still here")] }, NEW_APP)).status).toBe(200);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('sluice_config_reloads_total{outcome="error"} 1');
    expect(metrics).toContain('sluice_config_reloads_total{outcome="ok"} 1');

    writeConfig(b.url, [], "{ not json");
    expect((await reload()).status).toBe(422);
  });

  it("answers the operations API to admin keys only", async () => {
    expect((await fetch(`${url}/api/admin/channels`)).status).toBe(401);
    expect((await fetch(`${url}/api/admin/channels`, { headers: { authorization: `Bearer ${APP}` } })).status).toBe(403);
    const res = await fetch(`${url}/api/admin/channels`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(200);
    const { channels } = (await res.json()) as { channels: Array<Record<string, unknown>> };
    expect(channels).toEqual([
      expect.objectContaining({ name: "main", up: true, inFlight: 0, queued: 0, breaker: expect.objectContaining({ state: "closed" }) }),
    ]);
    expect(JSON.stringify(channels)).not.toContain(b.url);
  });

  it("applies reloaded breaker options to channels it already knows", async () => {
    // the channel's breaker exists from earlier requests; with the default 5 failures one would not open it
    writeConfig(b.url, [], undefined, { maxAttempts: 1, breaker: { failures: 1, cooldownMs: 60_000 } });
    expect((await reload()).status).toBe(200);
    // 503: the channel's own fault (a plain 500 counts only once a second caller meets one)
    b.behave({ status: 503 });
    expect((await chat(url, { messages: [userMessage("fails")] }, APP)).status).toBe(502);
    const res = await fetch(`${url}/api/admin/channels`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const { channels } = (await res.json()) as { channels: Array<{ breaker: { state: string } }> };
    expect(channels[0]!.breaker.state).toBe("open");
    b.behave({ status: 200 });
  });
});

describe("a config file that is not JSON", () => {
  // a key written without its quotes: JSON.parse's own message quotes the text around the error
  const LEAKY = ['{', '  "server": { "log": { "level": "info" } },', '  "apiKeys": [{ "name": "x", "kind": "admin", "key": sk-leak-me-0123456789 }]', '}'].join("\n");
  const PROBLEM = "config.json: invalid JSON at line 3, column 54";

  it("is reported by line and column only, never with its text", () => {
    writeFileSync(path, LEAKY);
    const err = (() => {
      try {
        loadConfigFile(path);
      } catch (e) {
        return e;
      }
    })() as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.problems).toEqual([PROBLEM]);
    expect(err.message).not.toContain("sk-leak");
    const cases: Array<[string, string]> = [
      ["", "config.json: invalid JSON at line 1, column 1"],
      ['{"a": 1,\n  "b": [1, 2,, 3]}', "config.json: invalid JSON at line 2, column 14"],
      ['{"a": "unterminated', "config.json: invalid JSON at line 1, column 20"],
      ['{"a": 1} {"b": 2}', "config.json: invalid JSON at line 1, column 10"],
      ['{"a": tru}', "config.json: invalid JSON at line 1, column 10"],
      ['{"a": "tab\there"}', "config.json: invalid JSON at line 1, column 11"],
    ];
    for (const [text, problem] of cases) {
      writeFileSync(path, text);
      expect(() => loadConfigFile(path), text).toThrow(expect.objectContaining({ problems: [problem] }));
    }
  });

  it("on reload: the API's answer and the log name line and column, never the text around the error", { timeout: 60_000 }, async () => {
    const processes = createMainProcesses();
    const own = join(dir, "process");
    const file = join(own, "config.json");
    mkdirSync(own, { recursive: true });
    const good = {
      server: { log: { level: "info" } },
      store: { driver: "memory" },
      channels: [{ name: "demo", type: "echo", models: ["m1"] }],
      llmModels: [{ model: "m1", maxContext: 4000, maxResponse: 100 }],
      apiKeys: [{ name: "admin", kind: "admin", key: ADMIN }],
    };
    try {
      writeFileSync(file, JSON.stringify(good));
      const gw = await processes.startMain(BUILT_ENTRY, ["--config", file]);
      writeFileSync(file, LEAKY);
      const res = await fetch(`${gw.url}/api/admin/reload`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}` } });
      const text = await res.text();
      expect(res.status).toBe(422);
      expect(JSON.parse(text)).toEqual({ ok: false, errors: [PROBLEM] });
      await expect.poll(() => gw.stdout()).toContain(PROBLEM);
      expect(gw.stdout() + gw.stderr()).not.toContain("sk-leak");

      // at start too: the fatal line names the place only
      const failed = await processes.spawnMain(BUILT_ENTRY, ["--config", file]);
      expect(await failed.exited).toBe(1);
      expect(failed.stdout()).toContain(PROBLEM);
      expect(failed.stdout() + failed.stderr()).not.toContain("sk-leak");
    } finally {
      await processes.killAll();
    }
  });
});
