// Tokens and points (CONTRACTS §5), and the byte bound that keeps counting off the hot path.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyLimits } from "../src/chat/limits.js";
import { parseConfig } from "../src/config/load.js";
import { boundMessage, countMessage, countMessages, countText } from "../src/tokens/counter.js";
import { computePoints } from "../src/tokens/points.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";

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

  it("does not count the prompt when the byte bound proves it fits", () => {
    const limited = applyLimits({ messages: [] } as never, [{ role: "user", content: "short" }], model(), undefined);
    expect(limited.promptTokens).toBeUndefined();
  });

  it("counts the prompt exactly when the bound does not prove the fit", () => {
    const messages = [{ role: "user" as const, content: "word ".repeat(2000) }];
    const limited = applyLimits({ messages } as never, messages, model({ maxContext: 3000, maxResponse: 500 }), undefined);
    expect(limited.promptTokens).toBe(countMessages(messages));
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
