// Routing and model limits (docs/api.md#request, docs/api.md#limits, docs/configuration.md#channels) as the
// upstream sees them.
import { beforeEach, describe, expect, it } from "vitest";
import { useGateway } from "./support/harness.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";


const h = useGateway((url) => {
  const cfg = coreConfig(`${url}/v1/`); // a baseUrl ending in /v1 must not be doubled
  (cfg.llmModels as Record<string, unknown>[]).push({ model: "tiny", maxContext: 60, maxResponse: 20 });
  (cfg.channels as Record<string, unknown>[])[0]!.models = ["m1", "m-vision", "tiny"];
  (cfg.apps as Record<string, unknown>[])[0]!.models = ["m1", "echo", "m-vision", "tiny"];
  return cfg;
});
beforeEach(() => h.upstream.reset());

describe("routing", () => {
  it("calls {baseUrl}/v1/chat/completions with the configured model, on both path prefixes", async () => {
    for (const path of ["/v1/chat/completions", "/api/v1/chat/completions"]) {
      const res = await chat(h.gw.url, { model: "m1", messages: [userMessage("hi")] }, undefined, path);
      expect(res.status).toBe(200);
      expect(h.upstream.last().path).toBe("/v1/chat/completions");
      expect(h.upstream.last().body.model).toBe("m1");
    }
  });

  it("uses the app's default model when the request names none", async () => {
    await chat(h.gw.url, { messages: [userMessage("hi")] });
    expect(h.upstream.last().body.model).toBe("m1");
  });

  it("answers 404 model_not_found for a model the app may not use or that does not exist", async () => {
    for (const model of ["nope", "../etc"]) {
      const res = await chat(h.gw.url, { model, messages: [userMessage("hi")] });
      expect(res.status).toBe(404);
      expect((await res.json()).error.code).toBe("model_not_found");
    }
  });

  it("answers 404 for the API base alone and for unknown paths", async () => {
    for (const path of ["/api", "/api/", "/nothing/here"]) {
      const res = await fetch(h.gw.url + path);
      expect(res.status).toBe(404);
      expect((await res.json()).error.code).toBe("not_found");
    }
  });

  it("passes unknown OpenAI fields through and drops FastGPT-only fields", async () => {
    await chat(h.gw.url, { messages: [userMessage("hi")], top_p: 0.5, stop: ["x"], detail: false, variables: { a: 1 } });
    const body = h.upstream.last().body;
    expect(body.top_p).toBe(0.5);
    expect(body.stop).toEqual(["x"]);
    expect(body).not.toHaveProperty("detail");
    expect(body).not.toHaveProperty("variables");
  });
});

describe("limits", () => {
  it("prepends the model's default system prompt when the request has none", async () => {
    await chat(h.gw.url, { messages: [userMessage("hi")] });
    expect(h.upstream.last().body.messages[0]).toEqual({ role: "system", content: "Be brief." });
    await chat(h.gw.url, { messages: [{ role: "system", content: "Mine." }, userMessage("hi")] });
    expect(h.upstream.last().body.messages.filter((m) => m.role === "system")).toEqual([{ role: "system", content: "Mine." }]);
  });

  it("clamps temperature to [0, maxTemperature]", async () => {
    await chat(h.gw.url, { messages: [userMessage("hi")], temperature: 1.9 });
    expect(h.upstream.last().body.temperature).toBe(1);
    await chat(h.gw.url, { messages: [userMessage("hi")], temperature: -3 });
    expect(h.upstream.last().body.temperature).toBe(0);
  });

  it("clamps max_tokens and max_completion_tokens to maxResponse, and sets it when absent", async () => {
    await chat(h.gw.url, { messages: [userMessage("hi")], max_tokens: 99999 });
    expect(h.upstream.last().body.max_tokens).toBe(1000);
    await chat(h.gw.url, { messages: [userMessage("hi")], max_completion_tokens: 50 });
    expect(h.upstream.last().body.max_tokens).toBe(50);
    await chat(h.gw.url, { messages: [userMessage("hi")] });
    expect(h.upstream.last().body.max_tokens).toBe(1000);
  });

  it("trims history by whole rounds, newest kept, and fits max_tokens to maxContext", async () => {
    const word = (n: number) => `round${n} ` + "lorem ipsum ".repeat(3);
    const messages = [];
    for (let i = 1; i <= 4; i++) messages.push(userMessage(word(i)), { role: "assistant", content: `answer ${i}` });
    messages.push(userMessage("last question"));
    const res = await chat(h.gw.url, { model: "tiny", messages });
    expect(res.status).toBe(200);
    const sent = h.upstream.last().body;
    const contents = sent.messages.map((m) => String(m.content));
    expect(contents.at(-1)).toBe("last question");
    expect(contents.some((c) => c.startsWith("round1"))).toBe(false); // oldest round dropped
    // whole rounds: every kept user turn keeps its answer
    for (let i = 1; i <= 4; i++) expect(contents.includes(word(i))).toBe(contents.includes(`answer ${i}`));
    expect(sent.max_tokens).toBeLessThanOrEqual(20);
  });

  it("answers 400 context_length_exceeded when the last user message alone does not fit", async () => {
    const res = await chat(h.gw.url, { model: "tiny", messages: [userMessage("word ".repeat(200))] });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe("context_length_exceeded");
  });

  it("answers 400 vision_not_supported for an image to a text-only model, and passes it to a vision model", async () => {
    const content = [{ type: "text", text: "what is this" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }];
    const res = await chat(h.gw.url, { model: "m1", messages: [{ role: "user", content }] });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: "vision_not_supported", param: "messages[0].content" });
    const ok = await chat(h.gw.url, { model: "m-vision", messages: [{ role: "user", content }] });
    expect(ok.status).toBe(200);
    expect(h.upstream.last().body.messages.at(-1)!.content).toEqual(content);
  });

  it("always asks a streaming upstream for usage", async () => {
    const res = await chat(h.gw.url, { messages: [userMessage("hi")], stream: true });
    await res.text();
    expect(h.upstream.last().body.stream_options).toEqual({ include_usage: true });
  });
});
