// Counting only what must be counted (issue 12): a group of messages answers "do you fit in N
// tokens?" as the exact count would, counting only until the bounds decide; counts of a
// conversation's messages are kept for its next request, under that chat alone; over HTTP, usage
// counted without the upstream's and budgets held from the byte bound still answer exactly.
import { createRequire } from "node:module";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { applyLimits } from "../src/chat/limits.js";
import type { ChatMessage } from "../src/chat/request-schema.js";
import { parseConfig } from "../src/config/load.js";
import { boundMessage, countMessage, countMessages, countedText, type TokenizerName } from "../src/tokens/counter.js";
import { createHistoryCounts } from "../src/tokens/history-counts.js";
import { createTally } from "../src/tokens/tally.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { chatOk, expectError, gatewayConfig, postChat, user } from "./support/fixtures.js";
import { ordinaryText, seeded } from "./support/text-corpus.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const encoder = createRequire(import.meta.url)("gpt-tokenizer/cjs/encoding/cl100k_base") as { countTokens(text: string): number };

/** The text gpt-tokenizer was given while `run` ran, part by part. */
async function countedWhile(run: () => Promise<unknown>): Promise<string[]> {
  const spy = vi.spyOn(encoder, "countTokens");
  try {
    await run();
    return spy.mock.calls.map(([part]) => part);
  } finally {
    spy.mockRestore();
  }
}

const model = (extra: Record<string, unknown>) =>
  parseConfig({ channels: [{ name: "c", models: ["m"] }], llmModels: [{ model: "m", ...extra }] }).llmModels[0]!;

function corpus(seed: number, n: number): ChatMessage[] {
  const rnd = seeded(seed);
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: ordinaryText(rnd, [5, 300, 5000, 14000][rnd(4)]!),
  }));
}

describe("a group's fit", () => {
  it("is what the exact count says for every limit around it, CJK and emoji included, and never leaves the bounds", async () => {
    const rnd = seeded(99);
    for (const tokenizer of ["cl100k_base", "o200k_base"] as const) {
      for (let i = 0; i < 12; i++) {
        const messages = corpus(1000 + i, 1 + rnd(5));
        const exact = countMessages(messages, tokenizer);
        for (const limit of [exact - 1, exact, exact + 1, rnd(exact), exact + rnd(exact)]) {
          const group = createTally(messages, tokenizer).group(messages.keys());
          expect(group.upper).toBe(messages.reduce((sum, m) => sum + boundMessage(m), 0));
          expect(await group.fits(limit)).toBe(exact <= limit);
          expect(group.lower).toBeLessThanOrEqual(exact);
          expect(group.upper).toBeGreaterThanOrEqual(exact);
          expect(await group.count()).toBe(exact);
          expect([group.lower, group.upper]).toEqual([exact, exact]);
        }
      }
    }
  });

  it("counts a small part of a 31 KB prompt to prove it fits a 32k model beside its answer", async () => {
    const content = "the quick brown fox jumps over the lazy dog, then naps. ".repeat(600).slice(0, 31_700);
    const messages: ChatMessage[] = [{ role: "user", content }];
    const m = model({ maxContext: 32_000, maxResponse: 2_000 });
    expect(boundMessage(messages[0]!) + 2_000).toBeGreaterThan(32_000);
    let limited: Awaited<ReturnType<typeof applyLimits>> | undefined;
    const parts = await countedWhile(async () => (limited = await applyLimits({ messages } as never, messages, m, undefined)));
    expect(limited!.maxTokens).toBe(2_000);
    expect(parts.join("").length).toBeLessThan(content.length / 4);
    expect(await limited!.countPrompt()).toBe(countMessages(messages));
  });
});

describe("counts kept between a conversation's requests", () => {
  const tokenizer: TokenizerName = "cl100k_base";
  const countAll = (messages: ChatMessage[], known: ReturnType<ReturnType<typeof createHistoryCounts>["forChat"]>) =>
    createTally(messages, tokenizer, { known }).group(messages.keys()).count();

  it("count a chat's new round and none of the history already counted", async () => {
    const counts = createHistoryCounts();
    const history = corpus(7, 4);
    let total = 0;
    await countedWhile(async () => (total = await countAll(history, counts.forChat("a1", "c1", tokenizer))));
    expect(total).toBe(countMessages(history));

    const round = corpus(8, 2);
    const next = [...history, ...round];
    const parts = await countedWhile(async () => (total = await countAll(next, counts.forChat("a1", "c1", tokenizer))));
    expect(total).toBe(countMessages(next));
    expect(parts.join("")).toBe(round.map(countedText).join(""));
  });

  it("are never shared between two chats, two apps or two tokenizers", async () => {
    const counts = createHistoryCounts();
    const history = corpus(9, 3);
    await countAll(history, counts.forChat("a1", "c1", tokenizer));
    for (const [appId, chatId] of [["a1", "c2"], ["a2", "c1"], ["a1c", "1"]] as const) {
      const parts = await countedWhile(() => countAll(history, counts.forChat(appId, chatId, tokenizer)));
      expect(parts.join("")).toBe(history.map(countedText).join(""));
    }
    const o200k = createTally(history, "o200k_base", { known: counts.forChat("a1", "c1", "o200k_base") }).group(history.keys());
    expect(await o200k.count()).toBe(countMessages(history, "o200k_base"));
  });

  it("forget the least recently used chats past their byte bound, and count them again exactly", async () => {
    const counts = createHistoryCounts({ maxBytes: 2_000 });
    const history = corpus(10, 3);
    await countAll(history, counts.forChat("a1", "old", tokenizer));
    for (let i = 0; i < 40; i++) await countAll([{ role: "user", content: `hello ${i}` }], counts.forChat("a1", `chat-${i}`, tokenizer));
    let total = 0;
    const parts = await countedWhile(async () => (total = await countAll(history, counts.forChat("a1", "old", tokenizer))));
    expect(parts.length).toBeGreaterThan(0);
    expect(total).toBe(countMessages(history));
  });
});

describe("over HTTP", () => {
  let upstream: Upstream;
  let gw: StartedGateway | undefined;
  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(() => upstream.close());
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
    upstream.reset();
  });

  it("counts usage the upstream did not report as the prompt it was sent, round after round of two chats", async () => {
    gw = await startGateway(gatewayConfig(upstream.url));
    upstream.behave({ usage: false });
    const rnd = seeded(11);
    for (let round = 0; round < 3; round++) {
      for (const chatId of ["chat-one", "chat-two"]) {
        const content = `${chatId} ${round}: ${ordinaryText(rnd, 200 + rnd(600))}`;
        const answer = await chatOk(gw.url, { chatId, messages: [user(content)] });
        const sent = upstream.requests.at(-1)!.body.messages as ChatMessage[];
        expect(sent.at(-1)).toEqual({ role: "user", content });
        expect(answer.usage.prompt_tokens).toBe(sent.reduce((sum, m) => sum + countMessage(m), 0));
      }
    }
    // history 2 rounds: the third round of a chat carries both earlier ones
    expect(upstream.requests.at(-1)!.body.messages).toHaveLength(5);
  });

  it("admits a request whose byte bound overdraws the budget but whose counted worst case fits; serves less of one whose counted worst case does not; refuses one whose prompt and one token do not fit", async () => {
    // m1: charsPointsPrice 2 per 1,000 tokens. 600 words: about 3,000 bytes but about 600 tokens, so
    // with max_tokens 100 the bound is over 6 points and the counted worst case about 1.4
    const prompt = "word ".repeat(600).trim();
    const promptTokens = countMessage({ role: "user", content: prompt });
    const worst = (2 * (promptTokens + 100)) / 1000;
    const least = (2 * (promptTokens + 1)) / 1000;
    expect((2 * (boundMessage({ role: "user", content: prompt }) + 100)) / 1000).toBeGreaterThan(6);
    for (const [budget, status, maxTokens] of [
      [5, 200, 100],
      [worst, 200, 100],
      // serve until spent: 5 tokens fewer than asked for are paid for by what is left
      [worst - 0.01, 200, 95],
      [least - 0.001, 429, 0],
    ] as const) {
      gw = await startGateway(gatewayConfig(upstream.url, { app: { maxUsagePoints: budget } }));
      const res = await postChat(gw.url, { messages: [user(prompt)], max_tokens: 100 });
      if (status === 429) await expectError(res, 429, "insufficient_quota");
      else {
        expect(res.status, await res.text()).toBe(200);
        expect(upstream.last().body.max_tokens).toBe(maxTokens);
      }
      await gw.close();
      gw = undefined;
    }
  });
});
