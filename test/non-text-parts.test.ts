// Parts that are not text — images, audio, files — on chat, Messages and Responses (docs/api.md#limits):
// each costs its model's declared worst case (`maxImageTokens`, `maxAudioTokens`, `maxFileTokens`)
// in the byte bound, the budget hold and the context check; `input_audio` and `file` parts reach only
// a model that declares them (`audioInput`, `fileInput`), as images need `vision`; and a settle that
// would pass the hold is capped at it, the rest on the request log (docs/api.md#budgets).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Observer, RequestRecord } from "../src/observability/observer.js";
import { silentObserver } from "../src/observability/observer.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const CHAT_KEY = "sk-parts-chat-key-0001";
const MESSAGES_KEY = "sk-parts-messages-key-0002";
const RESPONSES_KEY = "sk-parts-responses-key-0003";
const OPEN_KEY = "sk-parts-open-key-0004";
const BUDGET = 5;
// 400 KB of base64: the attack's image (or audio, or file)
const DATA = "A".repeat(400 * 1024);
// what the model server reports for such a prompt: 100 points at 1 point per 1,000 tokens
const MODEL_PROMPT_TOKENS = 100_000;

let upstream: Upstream;
let gw: StartedGateway;
const records: RequestRecord[] = [];

beforeAll(async () => {
  upstream = await startUpstream({ usage: { prompt_tokens: MODEL_PROMPT_TOKENS, completion_tokens: 5 } });
  const app = (id: string, budget?: number) => ({ id, model: "eye", models: ["eye", "eye-8k", "text-8k", "ears"], ...(budget ? { maxUsagePoints: budget } : {}) });
  const key = (name: string, appId: string, k: string) => ({ name, kind: "app", appId, key: k });
  const observer: Observer = { ...silentObserver, requestFinished: (r) => void records.push(r) };
  gw = await startGateway(
    {
      channels: [{ name: "up", baseUrl: upstream.url, key: "channel-key-parts", models: ["eye", "eye-8k", "text-8k", "ears"] }],
      llmModels: [
        { model: "eye", vision: true, maxContext: 200_000, maxResponse: 100, charsPointsPrice: 1 },
        { model: "eye-8k", vision: true, maxContext: 8000, maxResponse: 100, charsPointsPrice: 1 },
        { model: "text-8k", maxContext: 8000, maxResponse: 100, charsPointsPrice: 1 },
        { model: "ears", audioInput: true, fileInput: true, maxAudioTokens: 3000, maxFileTokens: 2000, maxContext: 8000, maxResponse: 100, charsPointsPrice: 1 },
      ],
      apps: [app("chat", BUDGET), app("messages", BUDGET), app("responses", BUDGET), app("open")],
      apiKeys: [key("chat-key", "chat", CHAT_KEY), key("messages-key", "messages", MESSAGES_KEY), key("responses-key", "responses", RESPONSES_KEY), key("open-key", "open", OPEN_KEY)],
    },
    { observerExtra: observer },
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

const post = (path: string, key: string, body: unknown) =>
  fetch(`${gw.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });

const imageUrl = `data:image/png;base64,${DATA}`;
const chatImage = (model: string, images = 1, url = imageUrl) => ({
  model,
  max_tokens: 16,
  messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }, ...Array.from({ length: images }, () => ({ type: "image_url", image_url: { url } }))] }],
});

async function errorOf(res: Response, status: number): Promise<{ code?: string; message: string; type: string }> {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: { code?: string; message: string; type: string } };
  return body.error;
}

describe("an image's worst case is held, and a settle never passes the hold", () => {
  // before: each of these spent 100.005 points of its app's 5-point budget (the image counted 0 tokens)
  const cases: Array<[string, string, string, unknown]> = [
    ["chat", CHAT_KEY, "/v1/chat/completions", chatImage("eye")],
    [
      "Messages",
      MESSAGES_KEY,
      "/v1/messages",
      { model: "eye", max_tokens: 16, messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: DATA } }] }] },
    ],
    [
      "Responses",
      RESPONSES_KEY,
      "/v1/responses",
      { model: "eye", max_output_tokens: 16, store: false, input: [{ role: "user", content: [{ type: "input_text", text: "what is this?" }, { type: "input_image", image_url: imageUrl }] }] },
    ],
  ];
  it.each(cases)("%s: 400 KB of base64 spends at most the hold, within the 5-point budget", async (_, key, path, body) => {
    const app = key === CHAT_KEY ? "chat" : key === MESSAGES_KEY ? "messages" : "responses";
    records.length = 0;
    const res = await post(path, key, body);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const spent = await gw.store.getSpent(`app:${app}`);
    expect(spent).toBeLessThanOrEqual(BUDGET);
    // the image's worst case (1,536 tokens by default) is in the hold: 1.5 points and a little
    expect(spent).toBeGreaterThan(1.536);
    const record = records.find((r) => r.appId === app)!;
    expect(record.points).toBe(spent);
    expect(record.pointsOverHold).toBeCloseTo(MODEL_PROMPT_TOKENS / 1000 + 0.005 - spent, 6);
  });
});

describe("parts count toward maxContext", () => {
  it("refuses images whose worst case is over an 8k context (before: ~100k tokens reached the model)", async () => {
    upstream.reset();
    // six images of 1,536 tokens each: 9,216 > 8,000
    const error = await errorOf(await post("/v1/chat/completions", OPEN_KEY, chatImage("eye-8k", 6, "data:image/png;base64,AAAA")), 400);
    expect(error.code).toBe("context_length_exceeded");
    const messages = await post("/v1/messages", OPEN_KEY, {
      model: "eye-8k",
      max_tokens: 16,
      messages: [{ role: "user", content: Array.from({ length: 6 }, () => ({ type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } })) }],
    });
    expect((await messages.json()).error.message).toMatch(/^prompt is too long: \d+ tokens > 7999 maximum$/);
    expect(upstream.requests).toHaveLength(0);
    // five fit: 7,680 tokens
    expect((await post("/v1/chat/completions", OPEN_KEY, chatImage("eye-8k", 5, "data:image/png;base64,AAAA"))).status).toBe(200);
  });

  it("refuses audio and file parts to a model that does not declare them (before: 200, the model read them)", async () => {
    upstream.reset();
    const audio = { type: "input_audio", input_audio: { data: DATA, format: "wav" } };
    const file = { type: "file", file: { file_data: `data:application/pdf;base64,${DATA}`, filename: "a.pdf" } };
    for (const [part, code] of [[audio, "audio_not_supported"], [file, "file_not_supported"]] as const) {
      const res = await post("/v1/chat/completions", OPEN_KEY, { model: "text-8k", messages: [{ role: "user", content: [{ type: "text", text: "hear" }, part] }] });
      expect(await errorOf(res, 400)).toMatchObject({ code, type: "invalid_request_error" });
    }
    const responses = await post("/v1/responses", OPEN_KEY, {
      model: "text-8k",
      store: false,
      input: [{ role: "user", content: [{ type: "input_file", file_data: DATA, filename: "a.pdf" }] }],
    });
    expect((await errorOf(responses, 400)).code).toBe("file_not_supported");
    expect(upstream.requests).toHaveLength(0);
  });

  it("serves audio and files to a model that declares them, each at its declared worst case", async () => {
    upstream.reset();
    const audio = { type: "input_audio", input_audio: { data: "AAAA", format: "wav" } };
    const file = { type: "file", file: { file_data: "AAAA", filename: "a.pdf" } };
    expect((await post("/v1/chat/completions", OPEN_KEY, { model: "ears", messages: [{ role: "user", content: [audio, file] }] })).status).toBe(200);
    // 3,000 + 2,000 + 3,000 > 8,000 - 100
    const three = await post("/v1/chat/completions", OPEN_KEY, { model: "ears", messages: [{ role: "user", content: [audio, file, audio] }] });
    expect((await errorOf(three, 400)).code).toBe("context_length_exceeded");
    expect(upstream.requests).toHaveLength(1);
  });
});
