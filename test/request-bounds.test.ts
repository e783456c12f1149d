// What one request may hold (docs/api.md#request-bounds), over real sockets (issue 27, items 1, 3,
// 9, 12, 14): a body is refused at its first wrong item and a list past its bound before any item is
// looked at; a caller who may not ask is refused before the body is validated; model names, stop
// strings and per-route bodies are bounded; count_tokens and the dialects' over-context refusals
// stop counting at the model's context. The stalls themselves (a 2 MB body of bad items) are
// test/abuse.test.ts's, whose poller watches /healthz.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { globMatcher } from "../src/metered/models.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startScriptedUpstream, textChunks, type ScriptedUpstream } from "./support/scripted-upstream.js";

const KEY = "sk-bounds-app-key-0001";
const GLOBAL = "sk-bounds-global-key-01";
const CONTEXT = 2000;
let upstream: ScriptedUpstream;
let gw: StartedGateway;

beforeAll(async () => {
  upstream = await startScriptedUpstream(() => ({ chunks: textChunks("fine", 1), finishReason: "stop", usage: { prompt_tokens: 5, completion_tokens: 1 } }));
  gw = await startGateway({
    server: { bodyLimitBytes: 1024 * 1024, dialectBodyLimitBytes: 2 * 1024 * 1024 },
    channels: [{ name: "gpu", baseUrl: upstream.url, models: ["m", "rr"], healthCheck: { intervalMs: 0 } }],
    llmModels: [{ model: "m", maxContext: CONTEXT, maxResponse: 100, completions: true }],
    reRankModels: [{ model: "rr", maxDocuments: 10 }],
    aliases: { "gpt-*-*": "m" },
    apps: [{ id: "a", model: "m", models: ["m", "rr"] }],
    apiKeys: [
      { name: "app", kind: "app", appId: "a", key: KEY },
      { name: "ops", kind: "global", key: GLOBAL },
    ],
    shareLinks: [{ shareId: "pub", appId: "a" }],
  });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const post = (path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }) =>
  fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
const anthropic = { "x-api-key": KEY };
const hi = [{ role: "user", content: "hi" }];
const errorOf = async (res: Response) => ((await res.json()) as { error: { code?: string; message: string; param?: string | null } }).error;
/** distinct words: no count is ever known before it is made */
const words = (n: number, seed: string) => Array.from({ length: n }, (_, i) => `${seed}${(i * 7919).toString(36)}`).join(" ");

describe("a caller who may not ask is refused before the body is validated", () => {
  it("a chat with neither key nor shareId: 401 (before: 400 naming messages[0].role)", async () => {
    const res = await post("/v1/chat/completions", { messages: [{ role: "x" }] }, {});
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe("missing_api_key");
  });

  it("a share-link user still chats without a key; an unknown link is 404 before the body is read for errors", async () => {
    expect((await post("/v1/chat/completions", { shareId: "pub", outLinkUid: "u1", messages: hi }, {})).status).toBe(200);
    const unknown = await post("/v1/chat/completions", { shareId: "nope", outLinkUid: "u1", messages: [{ role: "x" }] }, {});
    expect(unknown.status).toBe(404);
    expect((await errorOf(unknown)).code).toBe("share_link_not_found");
  });

  it("a global key's rerank: 403 (before: 400 naming documents[0], its 403 never reached)", async () => {
    const res = await post("/v1/rerank", { model: "rr", query: "q", documents: [1, 2, 3] }, { authorization: `Bearer ${GLOBAL}` });
    expect(res.status).toBe(403);
    expect((await errorOf(res)).code).toBe("app_key_required");
  });
});

describe("a body is refused at its first wrong item, a list past its bound before any item", () => {
  it("300,000 wrong content parts: 400 naming the bound (before: 500, RangeError from Math.max(...spread))", async () => {
    const body = `{"messages":[{"role":"user","content":[${Array(300_000).fill("1").join(",")}]}]}`;
    const res = await post("/v1/chat/completions", body);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ param: "messages[0].content", message: "messages[0].content: must hold at most 1000 items" });
  });

  it("more than 2,048 messages: 400 (before: every message validated, then forwarded)", async () => {
    const res = await post("/v1/chat/completions", { messages: Array(2049).fill(hi[0]) });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ param: "messages", message: "messages: must hold at most 2048 items" });
    expect((await post("/v1/chat/completions", { messages: Array(2048).fill(hi[0]) })).status).toBe(200);
  });

  it("within the bound, the first wrong item is the one named", async () => {
    const res = await post("/v1/chat/completions", { messages: [...Array(5).fill(hi[0]), { role: "x" }, { role: "y" }] });
    expect((await errorOf(res)).param).toBe("messages[5].role");
  });

  it("more documents than any rerank model ranks: 400 too_many_documents before one is read (before: 400 naming documents[0])", async () => {
    const res = await post("/v1/rerank", { model: "rr", query: "q", documents: Array(1000).fill(1) });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: "too_many_documents", message: "documents: A rerank model ranks at most 10 documents per request, got 1000." });
  });

  it("more than 2,048 embeddings inputs: 400 before one is read (before: 400 naming input[0])", async () => {
    const res = await post("/v1/embeddings", { model: "e", input: Array(3000).fill(null) });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ param: "input", message: "input: at most 2048 inputs per request, got 3000" });
  });

  it("the Messages and Responses routes bound their lists too", async () => {
    const tools = Array.from({ length: 1001 }, (_, i) => ({ name: `t${i}`, input_schema: {} }));
    const messages = await post("/v1/messages", { model: "m", max_tokens: 10, messages: hi, tools }, anthropic);
    expect(messages.status).toBe(400);
    expect((await errorOf(messages)).message).toBe("tools: must hold at most 1000 items");
    const responses = await post("/v1/responses", { model: "m", input: Array(10_001).fill({ role: "user", content: "hi" }) });
    expect(responses.status).toBe(400);
    expect((await errorOf(responses)).message).toBe("input: must hold at most 10000 items");
  });
});

describe("stop strings are bounded (before: 20,000 reached the model)", () => {
  it("chat and completions: at most 4, each at most 1,024 characters", async () => {
    const five = await post("/v1/chat/completions", { messages: hi, stop: ["a", "b", "c", "d", "e"] });
    expect(five.status).toBe(400);
    expect(await errorOf(five)).toMatchObject({ param: "stop", message: "stop: must hold at most 4 items" });
    const long = await post("/v1/chat/completions", { messages: hi, stop: "x".repeat(1025) });
    expect(long.status).toBe(400);
    expect((await errorOf(long)).message).toBe("stop: must be at most 1024 characters");
    const completions = await post("/v1/completions", { model: "m", prompt: "p", stop: Array(5).fill("s") });
    expect(completions.status).toBe(400);
    expect((await errorOf(completions)).param).toBe("stop");

    const four = await post("/v1/chat/completions", { messages: hi, stop: ["a", "b", "c", "d"] });
    expect(four.status).toBe(200);
    expect(upstream.requests.at(-1)!.body.stop).toEqual(["a", "b", "c", "d"]);
  });

  it("Messages: at most 16 stop_sequences", async () => {
    const res = await post("/v1/messages", { model: "m", max_tokens: 10, messages: hi, stop_sequences: Array(17).fill("s") }, anthropic);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toBe("stop_sequences: must hold at most 16 items");
  });
});

describe("model names are bounded, and globs match in linear time", () => {
  it("a model name over 256 characters is a 400 on every route (before: matched against every alias glob)", async () => {
    const model = `gpt-${"-".repeat(300)}`;
    const asked = [
      post("/v1/chat/completions", { model, messages: hi }),
      post("/v1/completions", { model, prompt: "p" }),
      post("/v1/embeddings", { model, input: "x" }),
      post("/v1/rerank", { model, query: "q", documents: ["d"] }),
      post("/v1/audio/speech", { model, input: "x", voice: "v" }),
      post("/v1/messages", { model, max_tokens: 10, messages: hi }, anthropic),
      post("/v1/messages/count_tokens", { model, messages: hi }, anthropic),
      post("/v1/responses", { model, input: "hi" }),
    ];
    for (const res of await Promise.all(asked)) {
      expect(res.status).toBe(400);
      expect(await res.text()).toContain("model: must be at most 256 characters");
    }
    const listed = await fetch(`${gw.url}/v1/models/${"gpt-".padEnd(5000, "-")}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(listed.status).toBe(404);
    // 256 characters are still a name the glob resolves
    expect((await post("/v1/chat/completions", { model: `gpt-4-${"o".repeat(250)}`, messages: hi })).status).toBe(200);
  });

  it("a glob is the text between its stars, found left to right", () => {
    const match = globMatcher("gpt-*-*");
    expect(match("gpt-4-o")).toBe(true);
    expect(match("gpt--")).toBe(true);
    expect(match("gpt-4")).toBe(false);
    expect(match(`gpt-${"-".repeat(40_000)}\n`)).toBe(true);
    expect(globMatcher("a*b*c")("axxbyyc")).toBe(true);
    expect(globMatcher("a*b*c")("axxcyyb")).toBe(false);
    expect(globMatcher("*-mini")("o4-mini")).toBe(true);
    expect(globMatcher("ab*ba")("aba")).toBe(false);
  });
});

describe("over-context prompts are counted no further than the context", () => {
  const long = words(4000, "w");

  it("count_tokens answers twice maxContext for a longer prompt, the figure its refusal gives (before: its whole count, 16,459)", async () => {
    const counted = await post("/v1/messages/count_tokens", { model: "m", messages: [{ role: "user", content: long }] }, anthropic);
    expect(await counted.json()).toEqual({ input_tokens: 2 * CONTEXT });
    const refused = await post("/v1/messages", { model: "m", max_tokens: 10, messages: [{ role: "user", content: long }] }, anthropic);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(`prompt is too long: ${2 * CONTEXT} tokens > ${CONTEXT - 1} maximum`);
    // up to twice the context, the count is exact, and the refusal says it
    const over = "word ".repeat(3000);
    const exact = ((await (await post("/v1/messages/count_tokens", { model: "m", messages: [{ role: "user", content: over }] }, anthropic)).json()) as { input_tokens: number }).input_tokens;
    expect(exact).toBeGreaterThan(CONTEXT);
    expect(exact).toBeLessThan(2 * CONTEXT);
    const refusedExact = await post("/v1/messages", { model: "m", max_tokens: 10, messages: [{ role: "user", content: over }] }, anthropic);
    expect(((await refusedExact.json()) as { error: { message: string } }).error.message).toBe(`prompt is too long: ${exact} tokens > ${CONTEXT - 1} maximum`);
  });

  it("Responses stops counting at the same bound (before: 'take N tokens', every token counted)", async () => {
    const res = await post("/v1/responses", { model: "m", input: words(4000, "r") });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).message).toBe(`The system messages and the last user message take at least ${2 * CONTEXT} tokens; model m allows ${CONTEXT} in all.`);
  });
});

describe("body limits per route", () => {
  const sized = (bytes: number) => words(Math.ceil(bytes / 8), "b").slice(0, bytes);

  it("chat keeps bodyLimitBytes while the dialects take dialectBodyLimitBytes", async () => {
    const chat = await post("/v1/chat/completions", { messages: [{ role: "user", content: sized(1.5 * 1024 * 1024) }] });
    expect(chat.status).toBe(413);
    const messages = await post("/v1/messages", { model: "m", max_tokens: 10, messages: [{ role: "user", content: sized(1.5 * 1024 * 1024) }] }, anthropic);
    expect(messages.status).toBe(400); // read whole, and refused for its context
    const responses = await post("/v1/responses", { model: "m", input: sized(1.5 * 1024 * 1024) });
    expect(responses.status).toBe(400);
  });

  it("the share routes take 64 KiB at most", async () => {
    const res = await post("/api/share/init", { shareId: "pub", outLinkUid: "u1", padding: "x".repeat(100 * 1024) }, {});
    expect(res.status).toBe(413);
    expect((await post("/api/share/init", { shareId: "pub", outLinkUid: "u1" }, {})).status).toBe(200);
  });
});
