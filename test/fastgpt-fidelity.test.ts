// FastGPT and OpenAI client fidelity (docs/api.md#request): request shapes FastGPT documents are accepted,
// its own fields never reach the upstream, errors name the field and what was expected.
import OpenAI from "openai";
import { beforeEach, describe, expect, it } from "vitest";
import { SseRelay } from "../src/stream/sse-relay.js";
import { useGateway } from "./support/harness.js";
import { APP_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";

const h = useGateway((url) => coreConfig(url, { shareLinks: [{ shareId: "open", appId: "a1", responseDetail: true }] }));
beforeEach(() => h.upstream.reset());

describe("request fields", () => {
  it("says what a wrongly typed field should be, naming it in param", async () => {
    const res = await chat(h.gw.url, { messages: [userMessage("x")], temperature: "hot" });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ param: "temperature", message: "temperature: expected a number, got a string" });
    const missing = await (await chat(h.gw.url, { model: "m1" })).json();
    expect(missing.error).toMatchObject({ param: "messages", message: "messages is required" });
  });

  it("takes chatId \"\" and null as stateless, and ids up to 250 characters", async () => {
    for (const chatId of ["", null]) {
      const res = await chat(h.gw.url, { messages: [userMessage("x")], chatId });
      expect(res.status).toBe(200);
      expect((await res.json()).id).not.toBe(chatId);
    }
    expect((await chat(h.gw.url, { messages: [userMessage("x")], chatId: "c".repeat(250) })).status).toBe(200);
    const long = await chat(h.gw.url, { messages: [userMessage("x")], chatId: "c".repeat(251) });
    expect(long.status).toBe(400);
    expect((await long.json()).error.param).toBe("chatId");
  });

  it("never forwards FastGPT-only fields to the upstream", async () => {
    const fastgpt = { appId: "a", responseChatItemId: "r", customUid: "u", metadata: { x: 1 }, retainDatasetCite: true, detail: false, variables: { v: 1 }, chatId: "f-1" };
    expect((await chat(h.gw.url, { messages: [userMessage("x")], top_p: 0.5, ...fastgpt })).status).toBe(200);
    const sent = h.upstream.last().body;
    for (const field of Object.keys(fastgpt)) expect(sent).not.toHaveProperty(field);
    expect(sent.top_p).toBe(0.5);
  });

  it("accepts a file_url content part and gives the model its name and url as text", async () => {
    const content = [
      { type: "text", text: "Summarise this" },
      { type: "file_url", name: "report.pdf", url: "https://example.com/report.pdf" },
    ];
    expect((await chat(h.gw.url, { messages: [{ role: "user", content }] })).status).toBe(200);
    const parts = h.upstream.last().body.messages.at(-1)!.content as Array<{ type: string; text?: string }>;
    expect(parts).toEqual([
      { type: "text", text: "Summarise this" },
      { type: "text", text: "[file: report.pdf](https://example.com/report.pdf)" },
    ]);
  });
});

describe("models", () => {
  it("retrieves one model with the openai SDK, and 404s one the key may not use", async () => {
    const client = new OpenAI({ apiKey: APP_KEY, baseURL: `${h.gw.url}/v1` });
    expect(await client.models.retrieve("m1")).toMatchObject({ id: "m1", object: "model" });
    await expect(client.models.retrieve("nope")).rejects.toMatchObject({ status: 404 });
  });
});

describe("n > 1", () => {
  it("keeps the first choice as the answer when choices interleave", () => {
    const ev = (index: number, content: string) =>
      `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index, delta: { content }, finish_reason: null }] })}\n\n`;
    const relay = new SseRelay({ detail: false, includeUsage: false, model: "m", write: () => true, onFirstContent: () => {} });
    relay.push(Buffer.from(ev(0, "Hel") + ev(1, "Other") + ev(0, "lo") + ev(1, " one") + "data: [DONE]\n\n"));
    expect(relay.text()).toBe("Hello");
  });
});

describe("share-link detail", () => {
  it("keeps the operator's system prompt out of historyPreview shown to share-link users", async () => {
    const res = await chat(h.gw.url, { shareId: "open", outLinkUid: "local-1", messages: [userMessage("hi")], detail: true }, null);
    expect(res.status).toBe(200);
    const body = await res.json();
    const preview = body.responseData[0].historyPreview as Array<{ obj: string; value: string }>;
    expect(preview.map((p) => p.obj)).toEqual(["Human"]);
    expect(JSON.stringify(body)).not.toContain("Be brief.");
    // an app key's own detail report still shows it
    const own = await (await chat(h.gw.url, { messages: [userMessage("hi")], detail: true })).json();
    expect(own.responseData[0].historyPreview[0]).toEqual({ obj: "System", value: "Be brief." });
  });
});
