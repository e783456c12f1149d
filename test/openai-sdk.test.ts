// The official openai SDK (v6) as a real client against the gateway.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { APP_KEY, GLOBAL_KEY, coreConfig } from "./support/core-config.js";

let upstream: Upstream;
let gw: StartedGateway;
let client: OpenAI;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startGateway(coreConfig(upstream.url));
  client = new OpenAI({ apiKey: APP_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

describe("openai SDK", () => {
  it("gets a non-stream completion with usage", async () => {
    const c = await client.chat.completions.create({ model: "m1", messages: [{ role: "user", content: "hi" }] });
    expect(c.choices[0]!.message.content).toBe("Hello from the test upstream. This answer is the same every time.");
    expect(c.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 13, total_tokens: 24 });
  });

  it("streams a completion, with usage when asked", async () => {
    const stream = await client.chat.completions.create({
      model: "m1",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("Hello from the test upstream. This answer is the same every time.");
    expect(usage?.completion_tokens).toBe(13);
  });

  it("works through the FastGPT-style /api/v1 base too", async () => {
    const api = new OpenAI({ apiKey: APP_KEY, baseURL: `${gw.url}/api/v1`, maxRetries: 0 });
    const c = await api.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "via api" }] });
    expect(c.choices[0]!.message.content).toBe("Echo: via api");
  });

  it("lists models", async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids.sort()).toEqual(["echo", "m-vision", "m1"]);
  });

  it("surfaces errors as APIError with status and code", async () => {
    const bad = new OpenAI({ apiKey: "sk-wrong-key-000000", baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await expect(bad.chat.completions.create({ model: "m1", messages: [{ role: "user", content: "x" }] })).rejects.toMatchObject({
      status: 401,
      code: "invalid_api_key",
    });
    const global = new OpenAI({ apiKey: GLOBAL_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await expect(global.chat.completions.create({ model: "m1", messages: [{ role: "user", content: "x" }] })).rejects.toMatchObject({
      status: 403,
      code: "app_key_required",
    });
    await expect(client.chat.completions.create({ model: "missing", messages: [{ role: "user", content: "x" }] })).rejects.toMatchObject({
      status: 404,
      code: "model_not_found",
    });
  });
});
