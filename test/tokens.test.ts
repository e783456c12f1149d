// Tokens and points (docs/api.md#tokens-and-points), the byte bound that keeps counting off the hot path, and
// counting in linear time without stalling the event loop.
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { applyLimits } from "../src/chat/limits.js";
import { parseConfig } from "../src/config/load.js";
import {
  boundMessage,
  countMessage,
  countMessages,
  countText,
  countTextAsync,
  type TokenizerName,
} from "../src/tokens/counter.js";
import { computePoints } from "../src/tokens/points.js";
import { createTally } from "../src/tokens/tally.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";
import { ordinaryText, randomRun, seeded } from "./support/text-corpus.js";

const model = (extra: Record<string, unknown> = {}) =>
  parseConfig({ channels: [{ name: "c", models: ["m"] }], llmModels: [{ model: "m", maxContext: 8000, maxResponse: 1000, ...extra }] }).llmModels[0]!;

describe("token counting", () => {
  it("counts a message as tokens(role + newline + content, trimmed) + 4", () => {
    expect(countMessage({ role: "user", content: "hello world  \n" })).toBe(countText("user\nhello world") + 4);
    expect(countMessages([userMessage("a") as never, { role: "assistant", content: "b" }])).toBe(countText("user\na") + countText("assistant\nb") + 8);
  });

  it("counts special-token spellings in user text as plain text", () => {
    expect(countText("<|endoftext|>")).toBeGreaterThan(1);
  });

  it("bounds every message's tokens from above by its UTF-8 bytes", () => {
    for (const content of ["hello", "你好世界，这是一个测试", "🙂🙂🙂", "x".repeat(1000), "a b c d e f"]) {
      const m = { role: "user" as const, content };
      expect(boundMessage(m)).toBeGreaterThanOrEqual(countMessage(m));
    }
  });

  it("does not count the prompt when the byte bound proves it fits", async () => {
    const spy = vi.spyOn(encoders.cl100k_base, "countTokens");
    try {
      const limited = await applyLimits({ messages: [] } as never, [{ role: "user", content: "short" }], model(), undefined);
      expect(limited.promptBound).toBe(boundMessage({ role: "user", content: "short" }));
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it("counts the prompt exactly when asked, whether or not the bound proved the fit", async () => {
    const messages = [{ role: "user" as const, content: "word ".repeat(2000) }];
    const limited = await applyLimits({ messages } as never, messages, model({ maxContext: 3000, maxResponse: 500 }), undefined);
    expect(await limited.countPrompt()).toBe(countMessages(messages));
    expect(limited.promptBound).toBeGreaterThanOrEqual(countMessages(messages));
    const roomy = await applyLimits({ messages } as never, messages, model(), undefined);
    expect(await roomy.countPrompt()).toBe(countMessages(messages));
  });
});

// gpt-tokenizer itself, to compare with: the same module instance the counter loads
const gptTokenizer = createRequire(import.meta.url);
const encoders = {
  cl100k_base: gptTokenizer("gpt-tokenizer/cjs/encoding/cl100k_base"),
  o200k_base: gptTokenizer("gpt-tokenizer/cjs/encoding/o200k_base"),
} as Record<TokenizerName, { countTokens(text: string, options: object): number }>;
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** The longest piece gpt-tokenizer's pre-tokenizing regex makes of `text`. */
function longestPiece(text: string, tokenizer: TokenizerName): number {
  const splits = gptTokenizer("gpt-tokenizer/cjs/encodingParams/constants");
  const regex: RegExp = tokenizer === "cl100k_base" ? splits.CL100K_TOKEN_SPLIT_REGEX : splits.O200K_TOKEN_SPLIT_REGEX;
  let longest = 0;
  for (const [piece] of text.matchAll(regex)) longest = Math.max(longest, piece.length);
  return longest;
}

describe("counting in linear time", () => {
  it("counts ordinary text (no piece over 128 chars) exactly as gpt-tokenizer's countTokens does", async () => {
    const rnd = seeded(20260501);
    for (const tokenizer of ["cl100k_base", "o200k_base"] as const) {
      for (let i = 0; i < 40; i++) {
        const text = ordinaryText(rnd, [50, 2000, 9000, 40000][i % 4]!);
        expect(longestPiece(text, tokenizer)).toBeLessThanOrEqual(128);
        const expected = encoders[tokenizer].countTokens(text, AS_TEXT);
        expect(countText(text, tokenizer)).toBe(expected);
        if (i % 4 === 3) expect(await countTextAsync(text, tokenizer)).toBe(expected);
      }
    }
    const messages = [
      { role: "system" as const, content: ordinaryText(rnd, 500) },
      { role: "user" as const, content: [{ type: "text" as const, text: ordinaryText(rnd, 6000) }] },
    ];
    expect(await createTally(messages, "cl100k_base").group(messages.keys()).count()).toBe(countMessages(messages));
  });

  it("counts a piece over 128 chars in chunks, never above its UTF-8 bytes nor splitting a surrogate pair", async () => {
    const rnd = seeded(7);
    for (const text of [randomRun(rnd, 5000, 0x61, 26), randomRun(rnd, 5001, 0x1f600, 80), " ".repeat(3000), "!?".repeat(2000)]) {
      const n = countText(text);
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThanOrEqual(Buffer.byteLength(text));
      expect(await countTextAsync(text)).toBe(n);
    }
  });

  it("stops soon after the running total passes stopAbove, without counting the rest", async () => {
    const text = ordinaryText(seeded(3), 1_000_000);
    const spy = vi.spyOn(encoders.cl100k_base, "countTokens");
    try {
      const partial = await countTextAsync(text, "cl100k_base", { stopAbove: 1000 });
      expect(partial).toBeGreaterThan(1000);
      const charsCounted = spy.mock.calls.reduce((sum, [part]) => sum + part.length, 0);
      expect(charsCounted).toBeLessThan(20_000);
      const messages = [{ role: "user" as const, content: text }, { role: "user" as const, content: text }];
      expect(await createTally(messages, "cl100k_base").group(messages.keys()).fits(50)).toBe(false);
      expect(spy.mock.calls.reduce((sum, [part]) => sum + part.length, 0)).toBeLessThan(40_000);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("points", () => {
  it("uses input and output prices when inputPrice > 0", () => {
    expect(computePoints(model({ inputPrice: 2, outputPrice: 6 }), 1000, 500)).toBe(2 + 3);
  });
  it("uses charsPointsPrice otherwise, and 0 when no price is set", () => {
    expect(computePoints(model({ charsPointsPrice: 1.5 }), 600, 400)).toBe(1.5);
    expect(computePoints(model(), 600, 400)).toBe(0);
  });
});

describe("usage in answers", () => {
  let upstream: Upstream;
  let gw: StartedGateway;
  beforeAll(async () => {
    upstream = await startUpstream();
    gw = await startGateway(coreConfig(upstream.url));
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });

  it("returns the upstream's usage when it reports one", async () => {
    const body = await (await chat(gw.url, { messages: [userMessage("hi")] })).json();
    expect(body.usage).toEqual({ prompt_tokens: 11, completion_tokens: 13, total_tokens: 24 });
  });

  it("counts usage when the upstream reports none", async () => {
    upstream.behave({ usage: false });
    const body = await (await chat(gw.url, { messages: [userMessage("hi")] })).json();
    const expectedIn = countMessages([{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }]);
    expect(body.usage.prompt_tokens).toBe(expectedIn);
    expect(body.usage.completion_tokens).toBe(countText(body.choices[0].message.content));
    upstream.reset();
  });
});
