// Legacy completions (docs/fleet.md#completions): the request checked field by field, the model's
// limits (temperature, max_tokens, maxContext over the longest prompt and its suffix), the answer's
// shape and usage (the upstream's, else counted with an echoed prompt left out), and the text and
// finish reason of a streamed answer's `text_completion` chunks. Over real sockets: the openai SDK's
// completions.create, whole and streamed, through a small server built of these functions.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream/promises";
import OpenAI from "openai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completionAnswer, countChoices, readTextCompletion, reportedUsage } from "../src/completions/answer.js";
import { applyCompletionLimits } from "../src/completions/limits.js";
import { COMPLETIONS_PATH, parseCompletionsRequest, promptList } from "../src/completions/request-schema.js";
import { TEXT_EVENT, chunkText, collectCompletionStream } from "../src/completions/stream-text.js";
import type { ModelConfig } from "../src/config/schema.js";
import { GatewayError } from "../src/http/errors.js";
import { countText } from "../src/tokens/counter.js";
import { startCompletionsUpstream, type CompletionsUpstream } from "./support/completions-upstream.js";

const MODEL: ModelConfig = {
  model: "qwen-coder",
  name: "Qwen Coder",
  maxContext: 100,
  maxResponse: 40,
  quoteMaxToken: 0,
  maxTemperature: 1,
  vision: false,
  defaultSystemChatPrompt: "",
  inputPrice: 0,
  outputPrice: 0,
  charsPointsPrice: 0,
  tokenizer: "cl100k_base",
  completions: true,
};

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

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

  it("clamps temperature and max_tokens, sets an absent max_tokens to maxResponse, keeps every other field", async () => {
    const l = await limits({ prompt: "def add(a, b):", suffix: "\n\nprint(add(1, 2))", temperature: 3, max_tokens: 500, stop: ["\n\n"], echo: false });
    expect(l.body).toEqual({ model: "qwen-coder", prompt: "def add(a, b):", suffix: "\n\nprint(add(1, 2))", temperature: 1, max_tokens: 40, stop: ["\n\n"], echo: false });
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
  it("reads each choice's text and finish reason from text_completion chunks", () => {
    expect(chunkText({ choices: [{ index: 1, text: "ab", finish_reason: null }] })).toEqual([{ index: 1, text: "ab", finishReason: undefined }]);
    expect(chunkText({ choices: [] })).toEqual([]);
    expect(chunkText({ usage: {} })).toEqual([]);
    expect(TEXT_EVENT.test('data: {"choices":[{"index":0,"text":"a"}]}')).toBe(true);
    expect(TEXT_EVENT.test('data: {"choices":[{"index":0,"text":""}]}')).toBe(false);
  });
});

/** A server made of the completions functions, forwarding to `upstream`: whole answers are checked,
 *  given usage and the client's model name; streams pass through as bytes. */
async function startCompletionsRelay(upstream: string): Promise<{ url: string; server: Server; streams: Buffer[][] }> {
  const streams: Buffer[][] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      try {
        const parsed = parseCompletionsRequest(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        const limited = await applyCompletionLimits(parsed, MODEL);
        const up = await request(`${upstream}${COMPLETIONS_PATH}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(limited.body) });
        if (parsed.stream) {
          const kept: Buffer[] = [];
          streams.push(kept);
          res.writeHead(200, { "content-type": "text/event-stream" });
          up.body.on("data", (c: Buffer) => kept.push(c));
          await pipeline(up.body, res);
          return;
        }
        const answer = readTextCompletion(await up.body.json());
        if (!answer) throw new GatewayError(502, "upstream_error", "not a text completion");
        const usage = reportedUsage(answer.usage) ?? {
          prompt_tokens: await limited.countPrompt(),
          completion_tokens: await countChoices(answer.choices.map((c) => c.text), parsed, MODEL),
        };
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(completionAnswer(answer, parsed.model, usage)));
      } catch (err) {
        const e = err instanceof GatewayError ? err : new GatewayError(502, "upstream_error", "relay failed");
        res.writeHead(e.status, { "content-type": "application/json" }).end(JSON.stringify(e.toBody()));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, streams };
}

describe("completions over real sockets", () => {
  let up: CompletionsUpstream;
  let relay: Awaited<ReturnType<typeof startCompletionsRelay>>;
  let openai: OpenAI;
  beforeAll(async () => {
    up = await startCompletionsUpstream();
    relay = await startCompletionsRelay(up.url);
    openai = new OpenAI({ apiKey: "sk-app", baseURL: `${relay.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    relay.server.close();
    await up.close();
  });

  it("answers completions.create for fill-in-the-middle, the suffix forwarded, the client's model named", async () => {
    up.behave({ usage: { prompt_tokens: 12, completion_tokens: 5 } });
    const res = await openai.completions.create({ model: "coder", prompt: "def add(a, b):\n    ", suffix: "\n\nprint(add(1, 2))", max_tokens: 64, temperature: 0.2 });
    expect(res.choices[0]!.text).toBe("return a + b;");
    expect(res.model).toBe("coder");
    expect(res.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
    expect(up.requests.at(-1)).toMatchObject({ model: "qwen-coder", suffix: "\n\nprint(add(1, 2))", max_tokens: 40, temperature: 0.2 });
  });

  it("counts usage when the upstream reports none", async () => {
    up.behave({ usage: false });
    const res = await openai.completions.create({ model: "coder", prompt: "Hello", echo: true });
    expect(res.choices[0]!.text).toBe("Hello world, said the model.");
    expect(res.usage).toEqual({ prompt_tokens: countText("Hello"), completion_tokens: countText(" world, said the model."), total_tokens: countText("Hello") + countText(" world, said the model.") });
  });

  it("streams text_completion chunks the SDK reads, and whose text the gateway recovers", async () => {
    up.behave({ usage: { prompt_tokens: 4, completion_tokens: 9 } });
    const stream = await openai.completions.create({ model: "coder", prompt: ["Hello", "Bye"], n: 2, stream: true, stream_options: { include_usage: true } });
    const seen: string[] = [];
    let usage: unknown;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("text_completion");
      for (const c of chunk.choices) seen[c.index] = (seen[c.index] ?? "") + c.text;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(seen).toEqual(Array(4).fill(" world, said the model."));
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 9 });
    const collected = collectCompletionStream(relay.streams.at(-1)!);
    expect(collected).toEqual({ texts: seen, text: " world, said the model.", finishReason: "stop", usage: { prompt_tokens: 4, completion_tokens: 9 } });
  });
});
