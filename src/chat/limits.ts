// A model's limits applied before the upstream call (CONTRACTS §3): default system prompt,
// temperature clamp, max_tokens clamp and fit, history trimmed by whole rounds, vision check.
// Trimming counts tokens only as far as they decide what is kept, without stalling the event loop.
import type { AppConfig, ModelConfig } from "../config/schema.js";
import { GatewayError, badRequest } from "../http/errors.js";
import { boundMessage, countMessagesAsync, createPacer } from "../tokens/counter.js";
import type { ChatMessage, ChatRequest } from "./request-schema.js";

export interface LimitedChat {
  messages: ChatMessage[];
  temperature: number | undefined;
  maxTokens: number;
  /** exact prompt tokens when they had to be counted; undefined when the byte bound proved the fit */
  promptTokens: number | undefined;
}

/** `renderPrompt` fills in a configured system prompt (FastGPT variables) before it is prepended. */
export async function applyLimits(
  req: ChatRequest,
  messages: ChatMessage[],
  model: ModelConfig,
  app: AppConfig | undefined,
  renderPrompt: (prompt: string) => string = (prompt) => prompt,
): Promise<LimitedChat> {
  // 1. Vision: an image to a text-only model is the caller's mistake, not something to drop silently.
  assertVision(messages, model);

  // 2. Default system prompt when the conversation has none.
  const withSystem = prependSystemPrompt(messages, model, app, renderPrompt);

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
  const { kept, tokens } = await trimToFit(withSystem, model.maxContext - maxTokens, model);
  maxTokens = Math.min(maxTokens, model.maxContext - tokens);
  if (maxTokens < 1) throw contextTooLong(model, `take ${tokens} tokens`);
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

function prependSystemPrompt(messages: ChatMessage[], model: ModelConfig, app: AppConfig | undefined, render: (prompt: string) => string): ChatMessage[] {
  if (messages.some((m) => m.role === "system")) return messages;
  // each prompt filled in on its own: a placeholder never spans the two
  const prompt = [model.defaultSystemChatPrompt, app?.systemPrompt ?? ""].filter((p) => p.length > 0).map(render).join("\n\n");
  return prompt ? [{ role: "system", content: prompt }, ...messages] : messages;
}

/**
 * Keeps system messages and everything from the last user message on, then adds whole earlier rounds
 * (a user message and what follows it) from newest to oldest while they fit in `budget` tokens.
 * Counts only what decides the outcome: the required part up to the first token that leaves no room
 * for an answer, then each round up to the first token over what is left.
 */
async function trimToFit(messages: ChatMessage[], budget: number, model: ModelConfig): Promise<{ kept: ChatMessage[]; tokens: number }> {
  const pacer = createPacer();
  const count = (list: ChatMessage[], stopAbove: number) => countMessagesAsync(list, model.tokenizer, { stopAbove, pacer });

  // The required part: at least one answer token must remain after it.
  let lastUser = messages.findLastIndex((m) => m.role === "user");
  if (lastUser < 0) lastUser = messages.length - 1;
  const ceiling = model.maxContext - 1;
  let tokens = await count(messages.filter((m, i) => m.role === "system" || i >= lastUser), ceiling);
  if (tokens > ceiling) throw contextTooLong(model, `take more than ${ceiling} tokens`);

  // Earlier rounds, newest first: [start, first) where start is a user message (or the first message).
  let first = lastUser;
  while (first > 0) {
    let start = first - 1;
    while (start > 0 && messages[start]!.role !== "user") start--;
    const room = budget - tokens;
    const roundTokens = await count(messages.slice(start, first).filter((m) => m.role !== "system"), room);
    if (roundTokens > room) break;
    tokens += roundTokens;
    first = start;
  }
  return { kept: messages.filter((m, i) => m.role === "system" || i >= first), tokens };
}

function contextTooLong(model: ModelConfig, take: string): GatewayError {
  return new GatewayError(
    400,
    "context_length_exceeded",
    `The system messages and the last user message ${take}; model ${model.model} allows ${model.maxContext} in all.`,
    { param: "messages" },
  );
}
