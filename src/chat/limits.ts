// A model's limits applied before the upstream call (CONTRACTS §3): default system prompt,
// temperature clamp, max_tokens clamp and fit, history trimmed by whole rounds, vision check.
import type { AppConfig, ModelConfig } from "../config/schema.js";
import { GatewayError, badRequest } from "../http/errors.js";
import { boundMessage, countMessage } from "../tokens/counter.js";
import type { ChatMessage, ChatRequest } from "./request-schema.js";

export interface LimitedChat {
  messages: ChatMessage[];
  temperature: number | undefined;
  maxTokens: number;
  /** exact prompt tokens when they had to be counted; undefined when the byte bound proved the fit */
  promptTokens: number | undefined;
}

export function applyLimits(req: ChatRequest, messages: ChatMessage[], model: ModelConfig, app: AppConfig | undefined): LimitedChat {
  // 1. Vision: an image to a text-only model is the caller's mistake, not something to drop silently.
  assertVision(messages, model);

  // 2. Default system prompt when the conversation has none.
  const withSystem = prependSystemPrompt(messages, model, app);

  // 3. Temperature clamped to [0, maxTemperature].
  const wanted = req.temperature ?? app?.temperature;
  const temperature = wanted == null ? undefined : Math.min(Math.max(wanted, 0), model.maxTemperature);

  // 4. max_tokens clamped to maxResponse (absent: maxResponse).
  let maxTokens = Math.min(req.max_tokens ?? req.max_completion_tokens ?? app?.maxToken ?? model.maxResponse, model.maxResponse);

  // 5. Fast path: the byte bound already proves everything fits, so nothing needs counting.
  let bound = 0;
  for (const m of withSystem) bound += boundMessage(m);
  if (bound + maxTokens <= model.maxContext) {
    return { messages: withSystem, temperature, maxTokens, promptTokens: undefined };
  }

  // 6. Trim history by whole rounds to fit maxContext - maxTokens, then fit maxTokens to what is left.
  const { kept, tokens } = trimToFit(withSystem, model.maxContext - maxTokens, model);
  maxTokens = Math.min(maxTokens, model.maxContext - tokens);
  if (maxTokens < 1) {
    throw new GatewayError(
      400,
      "context_length_exceeded",
      `The system messages and the last user message take ${tokens} tokens; model ${model.model} allows ${model.maxContext} in all.`,
      { param: "messages" },
    );
  }
  return { messages: kept, temperature, maxTokens, promptTokens: tokens };
}

function assertVision(messages: ChatMessage[], model: ModelConfig): void {
  if (model.vision) return;
  messages.forEach((m, i) => {
    if (Array.isArray(m.content) && m.content.some((p) => p.type === "image_url")) {
      throw badRequest("vision_not_supported", `Model ${model.model} does not accept images.`, `messages[${i}].content`);
    }
  });
}

function prependSystemPrompt(messages: ChatMessage[], model: ModelConfig, app: AppConfig | undefined): ChatMessage[] {
  if (messages.some((m) => m.role === "system")) return messages;
  const prompt = [model.defaultSystemChatPrompt, app?.systemPrompt ?? ""].filter((p) => p.length > 0).join("\n\n");
  return prompt ? [{ role: "system", content: prompt }, ...messages] : messages;
}

/**
 * Keeps system messages and everything from the last user message on, then adds whole earlier rounds
 * (a user message and what follows it) from newest to oldest while they fit in `budget` tokens.
 */
function trimToFit(messages: ChatMessage[], budget: number, model: ModelConfig): { kept: ChatMessage[]; tokens: number } {
  const cost = messages.map((m) => countMessage(m, model.tokenizer));
  const keep = new Array<boolean>(messages.length).fill(false);
  let tokens = 0;
  const take = (i: number) => {
    keep[i] = true;
    tokens += cost[i]!;
  };

  messages.forEach((m, i) => m.role === "system" && take(i));
  let lastUser = messages.findLastIndex((m) => m.role === "user");
  if (lastUser < 0) lastUser = messages.length - 1;
  for (let i = lastUser; i < messages.length; i++) if (!keep[i]) take(i);

  // Earlier rounds, newest first: [start, end) where start is a user message (or the first message).
  let end = lastUser;
  while (end > 0) {
    let start = end - 1;
    while (start > 0 && messages[start]!.role !== "user") start--;
    let roundCost = 0;
    for (let i = start; i < end; i++) if (messages[i]!.role !== "system") roundCost += cost[i]!;
    if (tokens + roundCost > budget) break;
    for (let i = start; i < end; i++) if (!keep[i]) take(i);
    end = start;
  }
  return { kept: messages.filter((_, i) => keep[i]), tokens };
}
