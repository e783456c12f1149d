// History trimming (docs/api.md#limits) counts only what decides the outcome, and keeps what counting
// every message would keep.
import { createRequire } from "node:module";
import { describe, expect, it, vi } from "vitest";
import { applyLimits, type LimitedChat } from "../src/chat/limits.js";
import type { ChatMessage, ChatRequest } from "../src/chat/request-schema.js";
import { parseConfig } from "../src/config/load.js";
import type { ModelConfig } from "../src/config/schema.js";
import { GatewayError } from "../src/http/errors.js";
import { boundMessage, countMessage, type TokenizerName } from "../src/tokens/counter.js";
import { createHistoryCounts } from "../src/tokens/history-counts.js";
import { ordinaryText, seeded } from "./support/text-corpus.js";

const model = (extra: Record<string, unknown>): ModelConfig =>
  parseConfig({ channels: [{ name: "c", models: ["m"] }], llmModels: [{ model: "m", ...extra }] }).llmModels[0]!;

const chatRequest = (maxTokens: number | undefined) => ({ messages: [], max_tokens: maxTokens }) as unknown as ChatRequest;

/** What the limits decide, with the prompt's exact tokens; `fast` when the byte bound proved the fit. */
interface Decided {
  messages: ChatMessage[];
  maxTokens: number;
  promptTokens: number;
  fast?: boolean;
}

/** The trimming as it was: every message counted up front, then rounds kept newest first. */
function referenceLimits(
  req: ChatRequest,
  messages: ChatMessage[],
  m: ModelConfig,
  cost = messages.map((msg) => countMessage(msg, m.tokenizer)),
): Decided | "context_length_exceeded" {
  let maxTokens = Math.min(req.max_tokens ?? m.maxResponse, m.maxResponse);
  if (messages.reduce((sum, msg) => sum + boundMessage(msg), 0) + maxTokens <= m.maxContext) {
    return { messages, maxTokens, promptTokens: cost.reduce((a, b) => a + b, 0), fast: true };
  }
  const budget = m.maxContext - maxTokens;
  const keep = messages.map((msg) => msg.role === "system");
  let lastUser = messages.findLastIndex((msg) => msg.role === "user");
  if (lastUser < 0) lastUser = messages.length - 1;
  for (let i = lastUser; i < messages.length; i++) keep[i] = true;
  let tokens = cost.reduce((sum, c, i) => (keep[i] ? sum + c : sum), 0);
  let end = lastUser;
  while (end > 0) {
    let start = end - 1;
    while (start > 0 && messages[start]!.role !== "user") start--;
    let roundCost = 0;
    for (let i = start; i < end; i++) if (messages[i]!.role !== "system") roundCost += cost[i]!;
    if (tokens + roundCost > budget) break;
    for (let i = start; i < end; i++) {
      if (!keep[i]) tokens += cost[i]!;
      keep[i] = true;
    }
    end = start;
  }
  maxTokens = Math.min(maxTokens, m.maxContext - tokens);
  if (maxTokens < 1) return "context_length_exceeded";
  return { messages: messages.filter((_, i) => keep[i]), maxTokens, promptTokens: tokens };
}

const withoutFast = ({ fast: _, ...decision }: Decided) => decision;

/** What applyLimits decided, its prompt counted exactly (and checked against its bound). */
async function decided(limited: LimitedChat): Promise<Omit<Decided, "fast">> {
  const promptTokens = await limited.countPrompt();
  expect(limited.promptBound).toBeGreaterThanOrEqual(promptTokens);
  return { messages: limited.messages, maxTokens: limited.maxTokens, promptTokens };
}

function randomContent(rnd: (n: number) => number): ChatMessage["content"] {
  const words = ["the", "model", "answer", "question", "token", "你好", "世界，", "🙂", "x = f(y);", "\n", "1234"];
  let text = "";
  const length = [0, 20, 200, 800, 3000][rnd(5)]! + rnd(100);
  while (text.length < length) text += words[rnd(words.length)] + (rnd(4) ? " " : "\n");
  if (rnd(15) === 0) text += "z".repeat(150 + rnd(400)); // a piece over MAX_PIECE: counted in chunks
  if (rnd(12) === 0) return null;
  if (rnd(6) === 0) return [{ type: "text", text }, { type: "text", text: text.slice(0, rnd(50)) }];
  return text;
}

/** Long messages of several counting parts: CJK, emoji, code, long words, odd spaces. */
function longContent(rnd: (n: number) => number): ChatMessage["content"] {
  const text = ordinaryText(rnd, [10, 3000, 9000, 20000][rnd(4)]! + rnd(500)) + (rnd(6) === 0 ? "ж".repeat(4000 + rnd(3000)) : "");
  if (rnd(5) === 0) return [{ type: "text", text }, { type: "text", text: ordinaryText(rnd, rnd(2000)) }];
  return text;
}

function randomConversation(rnd: (n: number) => number, content = randomContent, maxMessages = 24): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (rnd(2)) messages.push({ role: "system", content: content(rnd) });
  const n = 1 + rnd(maxMessages);
  for (let i = 0; i < n; i++) {
    const role = rnd(12) === 0 ? (["system", "tool", "developer"] as const)[rnd(3)]! : i % 2 === 0 ? "user" : "assistant";
    messages.push({ role, content: content(rnd) });
  }
  if (rnd(4)) messages.push({ role: "user", content: content(rnd) });
  return messages;
}

describe("history trimming", () => {
  it("keeps the same messages, max_tokens and prompt tokens as counting every message would", async () => {
    const rnd = seeded(8080);
    const seen = { fast: 0, trimmed: 0, overBudget: 0, refused: 0 };
    for (let i = 0; i < 300; i++) {
      const maxContext = 200 + rnd(4000);
      const tokenizer: TokenizerName = rnd(2) ? "cl100k_base" : "o200k_base";
      const m = model({ maxContext, maxResponse: 20 + rnd(maxContext - 20), tokenizer });
      const req = chatRequest(rnd(3) ? undefined : 1 + rnd(2 * m.maxResponse));
      const messages = randomConversation(rnd);

      const expected = referenceLimits(req, messages, m);
      const actual = await applyLimits(req, messages, m, undefined).catch((err: GatewayError) => err);
      if (expected === "context_length_exceeded") {
        seen.refused++;
        expect(actual).toBeInstanceOf(GatewayError);
        expect((actual as GatewayError).code).toBe("context_length_exceeded");
        continue;
      }
      expect(await decided(actual as LimitedChat)).toEqual(withoutFast(expected));
      if (expected.fast) seen.fast++;
      else if (expected.promptTokens > m.maxContext - Math.min(req.max_tokens ?? m.maxResponse, m.maxResponse)) seen.overBudget++;
      else seen.trimmed++;
    }
    // the corpus reaches every outcome
    for (const count of Object.values(seen)) expect(count).toBeGreaterThan(5);
  });

  it("keeps a round that fits to the token, and refuses only when no answer token is left", async () => {
    const rnd = seeded(4242);
    let checked = 0;
    for (let i = 0; i < 60; i++) {
      const messages = randomConversation(rnd).filter((msg) => msg.content !== null);
      const cost = messages.map((msg) => countMessage(msg));
      let lastUser = messages.findLastIndex((msg) => msg.role === "user");
      if (lastUser < 0) lastUser = messages.length - 1;
      const required = cost.reduce((sum, c, j) => (messages[j]!.role === "system" || j >= lastUser ? sum + c : sum), 0);
      // the newest earlier round's cost (0 when there is none)
      let start = lastUser - 1;
      while (start > 0 && messages[start]!.role !== "user") start--;
      const round = cost.reduce((sum, c, j) => (j >= start && j < lastUser && messages[j]!.role !== "system" ? sum + c : sum), 0);
      for (const maxContext of [required + round + 50, required + round + 49, required + round + 51, required, required + 1]) {
        if (maxContext <= 50) continue;
        const m = model({ maxContext, maxResponse: Math.min(50, maxContext - 1) });
        const req = chatRequest(50);
        const expected = referenceLimits(req, messages, m);
        const actual = await applyLimits(req, messages, m, undefined).then(decided, (err: GatewayError) => err.code);
        expect(actual).toEqual(typeof expected === "string" ? expected : withoutFast(expected));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(200);
  });

  it("decides as counting every message would on long CJK, emoji and code messages, with limits to the token", async () => {
    const rnd = seeded(31337);
    const counts = createHistoryCounts();
    const seen = { fast: 0, trimmed: 0, lowered: 0, refused: 0 };
    for (let i = 0; i < 16; i++) {
      const tokenizer: TokenizerName = i % 2 ? "cl100k_base" : "o200k_base";
      const messages = randomConversation(rnd, longContent, 6);
      const cost = messages.map((msg) => countMessage(msg, tokenizer));
      const bound = messages.reduce((sum, msg) => sum + boundMessage(msg), 0);
      let lastUser = messages.findLastIndex((msg) => msg.role === "user");
      if (lastUser < 0) lastUser = messages.length - 1;
      const required = cost.reduce((sum, c, j) => (messages[j]!.role === "system" || j >= lastUser ? sum + c : sum), 0);
      const all = cost.reduce((sum, c) => sum + c, 0);
      const answer = 500;
      // each edge the decisions turn on, and a token either side
      const edges = [required, required + answer, all + answer, bound + answer, required + Math.floor((all - required) / 2) + answer];
      for (const maxContext of edges.flatMap((e) => [e - 1, e, e + 1]).filter((c) => c > answer)) {
        const m = model({ maxContext, maxResponse: answer, tokenizer });
        const expected = referenceLimits(chatRequest(undefined), messages, m, cost);
        // once counting afresh, once with the counts kept from the conversation's earlier requests
        for (const known of [undefined, counts.forChat("app", `chat-${i}`, tokenizer)]) {
          const actual = await applyLimits(chatRequest(undefined), messages, m, undefined, { known }).then(decided, (err: GatewayError) => err);
          if (expected === "context_length_exceeded") {
            expect(actual).toMatchObject({
              status: 400,
              code: "context_length_exceeded",
              message: `The system messages and the last user message take more than ${maxContext - 1} tokens; model m allows ${maxContext} in all.`,
            });
          } else expect(actual).toEqual(withoutFast(expected));
        }
        if (expected === "context_length_exceeded") seen.refused++;
        else if (expected.fast) seen.fast++;
        else if (expected.maxTokens < answer) seen.lowered++;
        else seen.trimmed++;
      }
    }
    for (const count of Object.values(seen)) expect(count).toBeGreaterThan(5);
  });

  it("counts only a budget's worth of a 2 MB message, whether an old round or the last user message", async () => {
    const encoder = createRequire(import.meta.url)("gpt-tokenizer/cjs/encoding/cl100k_base");
    const spy = vi.spyOn(encoder, "countTokens");
    const charsCounted = () => spy.mock.calls.reduce((sum, [part]) => sum + (part as string).length, 0);
    const huge = "lorem ipsum dolor sit amet ".repeat(80_000);
    const m = model({ maxContext: 4000, maxResponse: 1000 });
    try {
      const system: ChatMessage = { role: "system", content: "Be brief." };
      const last: ChatMessage = { role: "user", content: "and now?" };
      const limited = await applyLimits({ messages: [] } as never, [system, { role: "user", content: huge }, { role: "assistant", content: "ok" }, last], m, undefined);
      expect(limited.messages).toEqual([system, last]);
      expect(charsCounted()).toBeLessThan(40_000);

      spy.mockClear();
      const refused = await applyLimits({ messages: [] } as never, [system, { role: "user", content: huge }], m, undefined).catch((err: GatewayError) => err);
      expect(refused).toMatchObject({ status: 400, code: "context_length_exceeded" });
      expect(charsCounted()).toBeLessThan(40_000);
    } finally {
      spy.mockRestore();
    }
  });
});
