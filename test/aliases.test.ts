// Model aliases (docs/configuration.md#aliases): a registered model of that name, else an exact
// alias, else the longest matching `*` glob; the app's models must allow the model it resolves to;
// the answer names what the client asked for; config errors for an alias of an unknown model.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/config/load.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { parseSse } from "./support/sse.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-alias-app-key-0001";
let upstream: Upstream;
let gw: StartedGateway;

const config = (url: string) => ({
  channels: [{ name: "up", baseUrl: url, models: ["qwen3-coder", "small", "secret"] }],
  llmModels: [{ model: "qwen3-coder" }, { model: "small" }, { model: "secret" }],
  aliases: { "claude-*": "qwen3-coder", "claude-haiku-*": "small", "gpt-4o": "small", "gpt-*": "qwen3-coder", "forbidden": "secret" },
  apps: [{ id: "a", model: "qwen3-coder", models: ["qwen3-coder", "small"] }],
  apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
});

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startGateway(config(upstream.url));
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const ask = (model: string, stream = false) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] }),
  });

describe("aliases", () => {
  it("resolve a model's name, an exact alias, then the longest glob; the upstream gets the configured model", async () => {
    for (const [asked, sent] of [
      ["qwen3-coder", "qwen3-coder"],
      ["gpt-4o", "small"],
      ["gpt-5.5", "qwen3-coder"],
      ["claude-sonnet-5", "qwen3-coder"],
      ["claude-haiku-4-5-20251001", "small"],
    ]) {
      const res = await ask(asked!);
      expect(res.status, asked).toBe(200);
      expect(upstream.last().body.model).toBe(sent);
      // the answer names what the client asked for
      expect(((await res.json()) as { model: string }).model).toBe(asked);
    }
  });

  it("name the alias in every chunk of a streamed answer", async () => {
    const frames = parseSse(await (await ask("gpt-5.5", true)).text()).filter((f) => f.data.startsWith("{"));
    expect(frames.length).toBeGreaterThan(1);
    for (const f of frames) expect(JSON.parse(f.data).model).toBe("gpt-5.5");
  });

  it("follow the app's models: an alias of a model the app may not use is 404, like an unknown name", async () => {
    for (const name of ["forbidden", "llama-3", "claude"]) {
      const res = await ask(name);
      expect(res.status, name).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("model_not_found");
    }
  });

  it("are checked at start: an unknown target, or an alias that would hide a model, is a config error", () => {
    const bad = { ...config("http://127.0.0.1:9"), aliases: { "claude-*": "nope", small: "qwen3-coder" } };
    expect(() => parseConfig(bad, {})).toThrow(/aliases\.claude-\*: unknown model "nope"[\s\S]*aliases\.small: "small" is a configured model already/);
  });
});
