// The fake upstream model itself: what it answers, how it misbehaves, and what it records.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseSse } from "./support/sse.js";
import { startUpstream, UPSTREAM_SECRET, type Upstream } from "./support/upstream.js";

let upstream: Upstream;
beforeAll(async () => {
  upstream = await startUpstream();
});
afterEach(() => upstream.reset());
afterAll(() => upstream.close());

function chat(body: object, init: RequestInit = {}) {
  return fetch(`${upstream.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer channel-key" },
    body: JSON.stringify({ model: "m1", messages: [{ role: "user", content: "hi" }], ...body }),
    ...init,
  });
}

/** The JSON payloads of the `data:` lines, `[DONE]` kept as a string. */
async function readEvents(res: Response): Promise<unknown[]> {
  return parseSse(await res.text()).map(({ data }) => (data === "[DONE]" ? data : JSON.parse(data)));
}

describe("test upstream", () => {
  it("Should answer a chat.completion with usage and record the request", async () => {
    const res = await chat({ stream: false });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      object: "chat.completion",
      model: "m1",
      choices: [{ message: { role: "assistant", content: expect.any(String) }, finish_reason: "stop" }],
      usage: { prompt_tokens: 11, completion_tokens: 13, total_tokens: 24 },
    });
    expect(upstream.last()).toMatchObject({
      path: "/v1/chat/completions",
      headers: { authorization: "Bearer channel-key" },
      body: { model: "m1", messages: [{ role: "user", content: "hi" }] },
    });
  });

  it("Should leave usage out when told usage: false", async () => {
    upstream.behave({ usage: false, text: "plain" });
    const body = (await (await chat({})).json()) as Record<string, unknown>;
    expect(body).not.toHaveProperty("usage");
    expect(body).toMatchObject({ choices: [{ message: { content: "plain" } }] });
  });

  it("Should stream the text in N chunks, a stop chunk and [DONE], without usage unless asked", async () => {
    upstream.behave({ text: "abcdefghij", chunks: 5 });
    const res = await chat({ stream: true });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const events = await readEvents(res);
    expect(events).toHaveLength(5 + 2);
    const pieces = events.slice(0, 5).map((e) => (e as { choices: { delta: { content: string } }[] }).choices[0]!.delta.content);
    expect(pieces.join("")).toBe("abcdefghij");
    expect(events[5]).toMatchObject({ choices: [{ delta: {}, finish_reason: "stop" }] });
    expect(events[6]).toBe("[DONE]");
  });

  it("Should send a usage chunk with no choices when stream_options.include_usage is set", async () => {
    const events = await readEvents(await chat({ stream: true, stream_options: { include_usage: true } }));
    expect(events.at(-2)).toMatchObject({ choices: [], usage: { prompt_tokens: 11, completion_tokens: 13, total_tokens: 24 } });
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("Should answer an error status with a body holding its secret and its own URL", async () => {
    upstream.behave({ status: 503 });
    const res = await chat({});
    expect(res.status).toBe(503);
    const text = await res.text();
    expect(text).toContain(UPSTREAM_SECRET);
    expect(text).toContain(upstream.url);
    expect(JSON.parse(text)).toMatchObject({ error: { message: expect.any(String) } });
  });

  it("Should cut the stream after cutAfterChunks chunks", async () => {
    upstream.behave({ cutAfterChunks: 2, chunkDelayMs: 1 });
    const res = await chat({ stream: true });
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it("Should report a request whose client went away before the answer", async () => {
    upstream.behave({ hang: true });
    const client = new AbortController();
    const pending = chat({}, { signal: client.signal }).catch(() => "aborted");
    await upstream.waitForRequests(1);
    client.abort();
    await upstream.waitForAbort();
    expect(await pending).toBe("aborted");
  });

  it("Should answer 404 outside the chat path", async () => {
    const res = await fetch(`${upstream.url}/v2/other`, { method: "POST", body: "{}" });
    expect(res.status).toBe(404);
  });
});
