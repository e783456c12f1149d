// Bad input (issue: gateway core, item 10): a clear OpenAI-shaped 4xx, and the server goes on.
import { describe, expect, it } from "vitest";
import { useGateway } from "./support/harness.js";
import { APP_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";

const h = useGateway((url) => coreConfig(url, { server: { bodyLimitBytes: 4096, log: { level: "silent" } } }));

async function expectError(res: Response, status: number, code: string, param?: string) {
  expect(res.status).toBe(status);
  const body = await res.json();
  expect(body.error).toMatchObject({ code, type: expect.any(String), message: expect.any(String) });
  if (param !== undefined) expect(body.error.param).toBe(param);
}

describe("bad input", () => {
  it("answers 400 invalid_json for malformed JSON", async () => {
    await expectError(await chat(h.gw.url, '{"messages": ['), 400, "invalid_json");
  });

  it("answers 400 for an empty body and for a JSON value that is not an object", async () => {
    await expectError(await chat(h.gw.url, ""), 400, "invalid_json");
    await expectError(await chat(h.gw.url, "[1,2]"), 400, "invalid_request");
  });

  it("answers 400 naming the field for missing or empty messages", async () => {
    await expectError(await chat(h.gw.url, { model: "m1" }), 400, "invalid_request", "messages");
    await expectError(await chat(h.gw.url, { messages: [] }), 400, "invalid_request", "messages");
  });

  it("answers 400 for wrong types, unknown roles and wrong content types", async () => {
    await expectError(await chat(h.gw.url, { messages: [userMessage("x")], temperature: "hot" }), 400, "invalid_request", "temperature");
    await expectError(await chat(h.gw.url, { messages: [{ role: "wizard", content: "x" }] }), 400, "invalid_request", "messages[0].role");
    await expectError(await chat(h.gw.url, { messages: [{ role: "user", content: 42 }] }), 400, "invalid_request", "messages[0].content");
    await expectError(await chat(h.gw.url, { messages: [userMessage("x")], stream: "yes" }), 400, "invalid_request", "stream");
  });

  it("answers 413 for a body over server.bodyLimitBytes", async () => {
    await expectError(await chat(h.gw.url, { messages: [userMessage("x".repeat(5000))] }), 413, "request_too_large");
  });

  it("answers 413 for an oversized chunked body without content-length", async () => {
    const big = new TextEncoder().encode(JSON.stringify({ messages: [userMessage("y".repeat(8000))] }));
    const body = new ReadableStream({
      start(c) {
        c.enqueue(big);
        c.close();
      },
    });
    const res = await fetch(`${h.gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${APP_KEY}` },
      body,
      duplex: "half",
    } as RequestInit);
    await expectError(res, 413, "request_too_large");
  });

  it("answers 415 for a non-JSON content type", async () => {
    const res = await fetch(`${h.gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "text/plain", authorization: `Bearer ${APP_KEY}` },
      body: JSON.stringify({ messages: [userMessage("x")] }),
    });
    await expectError(res, 415, "unsupported_media_type");
  });

  it("goes on serving after all of the above", async () => {
    const res = await chat(h.gw.url, { messages: [userMessage("still there?")] });
    expect(res.status).toBe(200);
  });
});
