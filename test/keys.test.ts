// Client keys (docs/api.md#keys) over a real socket.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { APP_KEY, CHANNEL_KEY, GLOBAL_KEY, HASHED_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";

let upstream: Upstream;
let gw: StartedGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  const cfg = coreConfig(upstream.url);
  (cfg.apiKeys as unknown[]).push({ name: "from-env", kind: "app", appId: "a1", key: "${TEST_ENV_KEY}" });
  gw = await startGateway(cfg, { env: { TEST_ENV_KEY: "sk-from-environment-01" } });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

const body = { messages: [userMessage("hi")] };

describe("API keys", () => {
  it("answers 401 missing_api_key without an Authorization header", async () => {
    const res = await chat(gw.url, body, null);
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe("missing_api_key");
  });

  it("answers 401 missing_api_key for a garbled header", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, { method: "POST", headers: { authorization: "Basic abc" }, body: JSON.stringify(body) });
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe("missing_api_key");
  });

  it("answers 401 invalid_api_key for an unknown key and does not echo it", async () => {
    const res = await chat(gw.url, body, "sk-unknown-key-shown-nowhere");
    expect(res.status).toBe(401);
    const text = await res.text();
    expect(JSON.parse(text).error).toMatchObject({ code: "invalid_api_key", type: "authentication_error" });
    expect(text).not.toContain("sk-unknown-key-shown-nowhere");
  });

  it("refuses a global key on chat with 403 app_key_required", async () => {
    const res = await chat(gw.url, body, GLOBAL_KEY);
    expect(res.status).toBe(403);
    const err = (await res.json()).error;
    expect(err.code).toBe("app_key_required");
    expect(err.message).toMatch(/application key/i);
  });

  it("accepts a key configured by its sha256 digest", async () => {
    const res = await chat(gw.url, body, HASHED_KEY);
    expect(res.status).toBe(200);
  });

  it("accepts a key configured as ${ENV}", async () => {
    const res = await chat(gw.url, body, "sk-from-environment-01");
    expect(res.status).toBe(200);
  });

  it("sends the channel's key upstream, never the client's", async () => {
    const res = await chat(gw.url, body, APP_KEY);
    expect(res.status).toBe(200);
    const seen = upstream.last();
    expect(seen.headers.authorization).toBe(`Bearer ${CHANNEL_KEY}`);
    expect(JSON.stringify(seen)).not.toContain(APP_KEY);
  });

  it("lists only the models a key may use", async () => {
    const appModels = await (await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${HASHED_KEY}` } })).json();
    expect(appModels.data.map((m: { id: string }) => m.id)).toEqual(["echo"]);
    const all = await (await fetch(`${gw.url}/api/v1/models`, { headers: { authorization: `Bearer ${GLOBAL_KEY}` } })).json();
    expect(all.object).toBe("list");
    expect(all.data.map((m: { id: string }) => m.id).sort()).toEqual(["echo", "m-vision", "m1"]);
    const none = await fetch(`${gw.url}/v1/models`);
    expect(none.status).toBe(401);
  });
});
