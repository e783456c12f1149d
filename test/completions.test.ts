// Legacy completions (docs/fleet.md#completions): the request checked field by field, the model's
// limits (temperature, max_tokens, maxContext over the longest prompt and its suffix), the answer's
// shape and usage (the upstream's, else counted with an echoed prompt left out), and the
// text of a streamed answer's `text_completion` chunks. Through the gateway over real sockets: the
// openai SDK's completions.create, whole and streamed (several prompts and choices), failover, serve
// until spent and a budget refusal, a stream cut short, usage rows and metrics.
import OpenAI from "openai";
import { describe, expect, it, vi } from "vitest";
import { completionAnswer, countChoices, readTextCompletion, reportedUsage } from "../src/completions/answer.js";
import { applyCompletionLimits } from "../src/completions/limits.js";
import { parseCompletionsRequest, promptList } from "../src/completions/request-schema.js";
import { COMPLETION_TEXT } from "../src/completions/stream-text.js";
import { SseRelay } from "../src/stream/sse-relay.js";
import type { ModelConfig } from "../src/config/schema.js";
import { countText } from "../src/tokens/counter.js";
import { expectError } from "./support/fixtures.js";
import { FLEET_KEY, TIGHT_KEY, useFleet } from "./support/fleet.js";
import { refusal } from "./support/refusal.js";

const MODEL: ModelConfig = {
  model: "qwen-coder",
  name: "Qwen Coder",
  maxContext: 100,
  maxResponse: 40,
  quoteMaxToken: 0,
  maxTemperature: 1,
  vision: false,
  maxImageTokens: 1536,
  audioInput: false,
  maxAudioTokens: 4096,
  fileInput: false,
  maxFileTokens: 8192,
  defaultSystemChatPrompt: "",
  inputPrice: 0,
  outputPrice: 0,
  charsPointsPrice: 0,
  tokenizer: "cl100k_base",
  completions: true,
  maxChoices: 4,
  passThrough: ["top_k"],
};

describe("completions request", () => {
  it("takes a prompt as a string, strings, token ids or lists of them", () => {
    expect(promptList(parseCompletionsRequest({ model: "m", prompt: "a" }).prompt)).toEqual(["a"]);
    expect(promptList(parseCompletionsRequest({ model: "m", prompt: ["a", "b"] }).prompt)).toEqual(["a", "b"]);
    expect(promptList(parseCompletionsRequest({ model: "m", prompt: [1, 2] }).prompt)).toEqual([[1, 2]]);
    expect(promptList(parseCompletionsRequest({ model: "m", prompt: [[1], [2, 3]] }).prompt)).toEqual([[1], [2, 3]]);
    expect(parseCompletionsRequest({ model: "m", prompt: "", suffix: "}", top_p: 0.9 })).toMatchObject({ suffix: "}", top_p: 0.9 });
  });

  it.each([
    [{ model: "m" }, "prompt", "prompt is required"],
    [{ model: "m", prompt: [] }, "prompt", "prompt must hold at least one item"],
    [{ model: "m", prompt: [[1], []] }, "prompt[1]", "prompt[1] must hold at least one token"],
    [{ model: "m", prompt: [1, "a"] }, "prompt[0]", "prompt[0]: expected a string, got a number"],
    [{ model: "m", prompt: "a", max_tokens: -1 }, "max_tokens", "max_tokens: must be at least 0"],
    [{ model: "m", prompt: "a", n: 0 }, "n", "n: must be at least 1"],
    [{ model: "m", prompt: "a", stop: 5 }, "stop", "stop: expected a string or an array, got a number"],
    [{ model: "m", prompt: "a", stream: "yes" }, "stream", "stream: expected true or false, got a string"],
  ])("refuses %j with a 400 naming %s", (body, param, message) => {
    const err = refusal(() => parseCompletionsRequest(body));
    expect(err).toMatchObject({ status: 400, param });
    expect(err.message).toBe(message);
  });
});

describe("completions limits", () => {
  const limits = (body: Record<string, unknown>) => applyCompletionLimits(parseCompletionsRequest({ model: "alias", ...body }), MODEL);

  it("clamps temperature and max_tokens, sets an absent max_tokens to maxResponse, keeps OpenAI's and the model's passThrough fields only", async () => {
    const l = await limits({ prompt: "def add(a, b):", suffix: "\n\nprint(add(1, 2))", temperature: 3, max_tokens: 500, stop: ["\n\n"], echo: false, top_k: 5, min_tokens: 4000, ignore_eos: true, suffix_extra: 1 });
    expect(l.body).toEqual({ model: "qwen-coder", prompt: "def add(a, b):", suffix: "\n\nprint(add(1, 2))", temperature: 1, max_tokens: 40, stop: ["\n\n"], echo: false, top_k: 5 });
    expect((await limits({ prompt: "x", temperature: -1 })).temperature).toBe(0);
    expect((await limits({ prompt: "x" })).maxTokens).toBe(40);
    expect((await limits({ prompt: "x", max_tokens: 0 })).maxTokens).toBe(0);
  });

  it("lowers max_tokens to what the longest prompt and its suffix leave", async () => {
    const long = "word ".repeat(70); // 70 tokens, 350 bytes
    const l = await limits({ prompt: ["short", long], suffix: " end", max_tokens: 40 });
    expect(l.maxTokens).toBe(100 - (countText(long) + countText(" end")));
    expect(await l.countPrompt()).toBe(countText("short") + countText(long) + 2 * countText(" end"));
    expect(l.promptBound).toBeGreaterThanOrEqual(await l.countPrompt());
  });

  it("refuses a prompt that leaves no room for an answer, naming it", async () => {
    await expect(limits({ prompt: "word ".repeat(100) })).rejects.toMatchObject({ status: 400, code: "context_length_exceeded", param: "prompt" });
    await expect(limits({ prompt: ["ok", "word ".repeat(99) + "x"] })).rejects.toMatchObject({ param: "prompt[1]" });
    await expect(limits({ prompt: Array.from({ length: 100 }, (_, i) => i) })).rejects.toMatchObject({ param: "prompt" });
    // a prompt scored with max_tokens 0 may fill the context
    expect((await limits({ prompt: Array.from({ length: 100 }, (_, i) => i), max_tokens: 0, echo: true })).maxTokens).toBe(0);
  });

  it("bounds the output by every generation: prompts × max(n, best_of) × max_tokens", async () => {
    const l = await limits({ prompt: ["a", "b"], n: 2, best_of: 3, max_tokens: 10 });
    expect(l.generations).toBe(6);
    expect(l.outputBound).toBe(60);
  });

  it("refuses more answers per prompt than the model's maxChoices, naming n or best_of", async () => {
    await expect(limits({ prompt: "a", n: 5 })).rejects.toMatchObject({ status: 400, param: "n" });
    await expect(limits({ prompt: "a", best_of: 5 })).rejects.toMatchObject({ status: 400, param: "best_of" });
  });

  it("asks a stream for usage always, the client's stream_options kept", async () => {
    expect((await limits({ prompt: "a", stream: true })).body.stream_options).toEqual({ include_usage: true });
    expect((await limits({ prompt: "a", stream: true, stream_options: { include_usage: false } })).body.stream_options).toEqual({ include_usage: true });
    expect((await limits({ prompt: "a" })).body).not.toHaveProperty("stream_options");
  });
});

describe("completions answer", () => {
  const answer = { id: "cmpl-1", object: "text_completion", model: "qwen-coder", choices: [{ index: 0, text: "hi", finish_reason: "stop" }] };

  it("accepts a text completion and refuses a chat answer or garbage", () => {
    expect(readTextCompletion(answer)).toBe(answer);
    expect(readTextCompletion({ choices: [{ message: { content: "hi" } }] })).toBeUndefined();
    expect(readTextCompletion([1])).toBeUndefined();
  });

  it("uses a usable reported usage, and counts the choices otherwise, an echoed prompt left out", async () => {
    expect(reportedUsage({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 })).toEqual({ prompt_tokens: 3, completion_tokens: 4 });
    expect(reportedUsage({ prompt_tokens: 3 })).toBeUndefined();
    expect(reportedUsage(null)).toBeUndefined();
    const req = parseCompletionsRequest({ model: "m", prompt: ["Hello", "Bye"], n: 2, echo: true });
    const texts = ["Hello world", "Hello there", "Bye now", "Bye"];
    expect(await countChoices(texts, req, MODEL)).toBe(countText(" world") + countText(" there") + countText(" now") + 0);
    expect(completionAnswer(answer, "alias", { prompt_tokens: 3, completion_tokens: 4 })).toMatchObject({
      model: "alias",
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  });
});

describe("completions stream text", () => {
  it("tells the SSE relay where a text_completion chunk's text is: every choice's recovered, the first content seen", () => {
    const written: string[] = [];
    let first = 0;
    const relay = new SseRelay({ detail: false, includeUsage: false, model: "m", write: (b) => written.push(String(b)) > 0, onFirstContent: () => first++, text: COMPLETION_TEXT });
    const event = (choices: unknown[]) => Buffer.from(`data: ${JSON.stringify({ object: "text_completion", choices })}\n\n`);
    relay.push(event([{ index: 0, text: "", finish_reason: null }]));
    expect(first).toBe(0);
    relay.push(event([{ index: 1, text: "ab", finish_reason: null }]));
    relay.push(event([{ index: 0, text: "cd", finish_reason: null }, { index: 1, text: "e", finish_reason: "stop" }]));
    relay.push(event([{ index: 0, text: "", finish_reason: "length" }]));
    relay.push(Buffer.from("data: [DONE]\n\n"));
    expect(first).toBe(1);
    expect(relay.texts()).toEqual(["cd", "abe"]);
    expect(relay.text()).toBe("cd");
    expect(relay.finishReason()).toBe("length");
    expect(relay.done).toBe(true);
  });
});

describe("completions through the gateway", () => {
  const f = useFleet();
  const openai = (key = FLEET_KEY) => new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
  const points = (input: number, output: number) => Math.round((input * 1 + output * 2)) / 1000;

  it("answers completions.create for fill-in-the-middle: suffix forwarded, max_tokens clamped, the client's model named, billed", async () => {
    f.code[0].behave({ usage: { prompt_tokens: 12, completion_tokens: 5 } });
    const res = await openai().completions.create({ model: "gpt-3.5-turbo-instruct", prompt: "def add(a, b):\n    ", suffix: "\n\nprint(add(1, 2))", max_tokens: 500, temperature: 0.2 });
    expect(res.choices[0]!.text).toBe("return a + b;");
    expect(res.model).toBe("gpt-3.5-turbo-instruct");
    expect(res.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
    expect(f.code[0].requests.at(-1)).toMatchObject({ model: "qwen-coder", suffix: "\n\nprint(add(1, 2))", max_tokens: 100, temperature: 0.2 });
    expect(f.rows).toEqual([expect.objectContaining({ appId: "fleet", model: "qwen-coder", channel: "code-a", inputTokens: 12, outputTokens: 5, points: points(12, 5), status: 200, finishReason: "stop" })]);
  });

  it("counts usage when the upstream reports none, an echoed prompt left out", async () => {
    f.code[0].behave({ usage: false });
    const res = await openai().completions.create({ model: "qwen-coder", prompt: "Hello", echo: true });
    expect(res.choices[0]!.text).toBe("Hello world, said the model.");
    const [input, output] = [countText("Hello"), countText(" world, said the model.")];
    expect(res.usage).toEqual({ prompt_tokens: input, completion_tokens: output, total_tokens: input + output });
    expect(f.rows[0]).toMatchObject({ inputTokens: input, outputTokens: output });
  });

  it("streams text_completion chunks of several prompts and choices naming the alias asked for, with the usage chunk asked for", async () => {
    f.code[0].behave({ usage: { prompt_tokens: 4, completion_tokens: 9 } });
    const stream = await openai().completions.create({ model: "gpt-3.5-turbo-instruct", prompt: ["Hello", "Bye"], n: 2, stream: true, stream_options: { include_usage: true } });
    const seen: string[] = [];
    let usage: unknown;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("text_completion");
      expect(chunk.model).toBe("gpt-3.5-turbo-instruct"); // the alias asked for, in every chunk
      for (const c of chunk.choices) seen[c.index] = (seen[c.index] ?? "") + c.text;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(seen).toEqual(Array(4).fill(" world, said the model."));
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 9 });
    expect(f.rows[0]).toMatchObject({ inputTokens: 4, outputTokens: 9, finishReason: "stop", status: 200 });
  });

  it("counts every streamed choice's text when the upstream reports no usage, and hides the usage it was asked for", async () => {
    f.code[0].behave({ usage: { prompt_tokens: 4, completion_tokens: 9 } });
    const stream = await openai().completions.create({ model: "qwen-coder", prompt: ["Hello", "Bye"], n: 2, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(f.code[0].requests.at(-1)!.stream_options).toEqual({ include_usage: true });
    f.code[0].behave({ usage: false });
    for await (const _ of await openai().completions.create({ model: "qwen-coder", prompt: ["Hello", "Bye"], n: 2, stream: true })) void _;
    expect(f.rows[1]).toMatchObject({ inputTokens: countText("Hello") + countText("Bye"), outputTokens: 4 * countText(" world, said the model.") });
  });

  it("streams a whole answer the model gave to a stream request, as the stream the client asked for", async () => {
    f.code[0].behave({ ignoreStream: true, usage: { prompt_tokens: 3, completion_tokens: 6 } });
    const stream = await openai().completions.create({ model: "qwen-coder", prompt: ["Hello", "Bye"], stream: true, stream_options: { include_usage: true } });
    const seen: string[] = [];
    const finish: string[] = [];
    let usage: unknown;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        seen[c.index] = (seen[c.index] ?? "") + c.text;
        if (c.finish_reason) finish[c.index] = c.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(seen).toEqual([" world, said the model.", " world, said the model."]);
    expect(finish).toEqual(["stop", "stop"]);
    expect(usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 6 });
    expect(f.rows[0]).toMatchObject({ inputTokens: 3, outputTokens: 6, status: 200 });
  });

  it("bills a stream the model broke off for what it sent, and ends it with an error event", async () => {
    f.code[0].behave({ usage: false, cutAfter: 2, chunks: 3 });
    const res = await f.post("/v1/completions", { model: "qwen-coder", prompt: "Hello", stream: true });
    const text = await res.text();
    expect(text).toContain('"error"');
    expect(text).not.toContain("[DONE]");
    const sent = " world, said the model.".slice(0, 2 * Math.ceil(23 / 3));
    await vi.waitFor(() => expect(f.rows[0]).toMatchObject({ status: 502, finishReason: "upstream_error", outputTokens: countText(sent) }));
  });

  it("fails over to the second channel when the first answers 503", async () => {
    f.code[0].behave({ status: 503 });
    const res = await openai().completions.create({ model: "qwen-coder", prompt: "Hello" });
    expect(res.choices[0]!.text).toBe(" world, said the model.");
    expect(f.rows).toEqual([expect.objectContaining({ channel: "code-b", status: 200 })]);
    expect(await f.metrics()).toContain('sluice_upstream_attempts_total{channel="code-a",outcome="retried"} 1');
  });

  it("serves until spent: a budget that cannot pay for max_tokens lowers it, one that cannot pay for the prompt refuses 429", async () => {
    // 0.01 points: "Hello" (1 token, 0.001) leaves 0.009, which pays 4 answer tokens at 0.002
    f.code[0].behave({ usage: { prompt_tokens: 1, completion_tokens: 4 } });
    const res = await openai(TIGHT_KEY).completions.create({ model: "qwen-coder", prompt: "Hello", max_tokens: 50 });
    expect(res.usage).toMatchObject({ prompt_tokens: 1, completion_tokens: 4 });
    expect(f.code[0].requests.at(-1)!.max_tokens).toBe(4);
    const before = f.code[0].requests.length;
    await expectError(await f.post("/v1/completions", { model: "qwen-coder", prompt: "word ".repeat(20) }, TIGHT_KEY), 429, "insufficient_quota");
    expect(f.code[0].requests.length).toBe(before);
  });

  it("refuses a chat model not marked for completions, and bad input, in OpenAI's shape", async () => {
    await expectError(await f.post("/v1/completions", { model: "chat-only", prompt: "Hello" }), 404, "model_not_found");
    expect((await expectError(await f.post("/v1/completions", { model: "qwen-coder", prompt: [] }), 400, "invalid_request")).param).toBe("prompt");
    expect((await expectError(await f.post("/v1/completions", { model: "qwen-coder", prompt: "a", n: 9 }), 400, "invalid_request")).param).toBe("n");
    await expectError(await f.post("/v1/completions", { model: "qwen-coder", prompt: "word ".repeat(2000) }), 400, "context_length_exceeded");
  });

  it('counts requests, points and latency under route="completions", time to first token for streams', async () => {
    f.code[0].behave({ usage: { prompt_tokens: 12, completion_tokens: 5 } });
    await openai().completions.create({ model: "qwen-coder", prompt: "x" });
    for await (const _ of await openai().completions.create({ model: "qwen-coder", prompt: "x", stream: true, stream_options: { include_usage: true } })) void _;
    const metrics = await f.metrics();
    expect(metrics).toContain('sluice_requests_total{route="completions",model="qwen-coder",app="fleet",status="200"} 2');
    expect(metrics).toContain(`sluice_route_points_total{route="completions",model="qwen-coder",app="fleet"} ${2 * points(12, 5)}`);
    expect(metrics).toContain('gen_ai_server_time_to_first_token_seconds_count{model="qwen-coder"} 1');
  });
});
