// A dialect's opening events (the Responses API's response.created, Anthropic's message_start) go
// out with the answer's first events, in one write, or on their own when the model says nothing for
// a while (src/chat/dialect-spec.ts): a client waiting on a model that thinks in silence sees the
// answer begin. The model server here holds its answer after a first empty chunk until the test
// has read the opening events.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatChunk } from "../src/chat/dialect.js";
import { APP_KEY, MODEL, startResponsesGateway, type ResponsesGateway } from "./support/responses-gateway.js";
import { textChunks } from "./support/scripted-upstream.js";

let h: ResponsesGateway;
beforeAll(async () => {
  h = await startResponsesGateway();
});
afterAll(() => h.close());

const CASES = [
  { path: "/v1/responses", body: { input: "hi" }, opening: "response.created", end: "response.completed" },
  { path: "/v1/messages", body: { max_tokens: 50, messages: [{ role: "user", content: "hi" }] }, opening: "message_start", end: "message_stop" },
];

describe("the opening events of a dialect's stream", () => {
  it.each(CASES)("$path: $opening reaches the client while the model says nothing, the answer follows", async ({ path, body, opening, end }) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const empty: ChatChunk = { choices: [{ index: 0, delta: { role: "assistant", content: "" } }] };
    h.play(() => ({ chunks: [empty, ...textChunks("said later", 1)], finishReason: "stop", holdAfterFirst: held, usage: { prompt_tokens: 3, completion_tokens: 2 } }));
    const res = await fetch(`${h.gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${APP_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, stream: true, ...body }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    const readUntil = async (what: string) => {
      while (!seen.includes(what)) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += decoder.decode(value, { stream: true });
      }
    };
    await readUntil(`event: ${opening}`);
    expect(seen).toContain(`event: ${opening}`);
    expect(seen).not.toContain("said");
    release();
    await readUntil(`event: ${end}`);
    expect(seen).toContain("said later");
    expect(seen).toContain(`event: ${end}`);
    expect(seen.indexOf(`event: ${opening}`)).toBe(seen.indexOf("event: "));
  });

  it.each(CASES)("$path: a client gone before the opening went out is a client abort; the gateway goes on", async ({ path, body, end }) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const empty: ChatChunk = { choices: [{ index: 0, delta: { role: "assistant", content: "" } }] };
    h.play(() => ({ chunks: [empty, ...textChunks("never read", 1)], finishReason: "stop", holdAfterFirst: held, usage: { prompt_tokens: 3, completion_tokens: 2 } }));
    const asked = h.upstream.requests.length;
    const rows = h.usage.rows.length;
    const leaving = new AbortController();
    const gone = fetch(`${h.gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${APP_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, stream: true, ...body }),
      signal: leaving.signal,
    }).catch((err: unknown) => err);
    while (h.upstream.requests.length === asked) await new Promise((r) => setImmediate(r));
    leaving.abort();
    await gone;
    // settled as a client abort while the model still holds its answer
    const row = await h.usage.row(rows);
    expect([row.status, row.finishReason]).toEqual([499, "client_abort"]);
    release();
    // the next answer is whole
    h.play(() => ({ chunks: textChunks("fine", 1), finishReason: "stop", usage: { prompt_tokens: 3, completion_tokens: 1 } }));
    const res = await fetch(`${h.gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${APP_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, stream: true, ...body }),
    });
    expect(await res.text()).toContain(`event: ${end}`);
  });
});
