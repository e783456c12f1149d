// A model's limits applied before the upstream call (docs/api.md#limits): default system prompt,
// temperature clamp, max_tokens clamp and fit, history trimmed by whole rounds (or, for an agent's
// dialect, never trimmed: refused with its count), the parts the model accepts (images, audio,
// files), each costing its declared worst case. The tool definitions count as part of the prompt.
// Trimming counts tokens only as far as they decide what is kept, without stalling the event loop.
import type { AppConfig, ModelConfig } from "../config/schema.js";
import { GatewayError, badRequest } from "../http/errors.js";
import { boundMessage, type PartCosts } from "../tokens/counter.js";
import { createTally, type KnownCounts, type Tally, type TokenGroup } from "../tokens/tally.js";
import type { ChatMessage, ChatRequest } from "./request-schema.js";

export interface LimitedChat {
  messages: ChatMessage[];
  temperature: number | undefined;
  maxTokens: number;
  /** at least the prompt's tokens: its byte bound, narrowed by whatever the limits had to count */
  promptBound: number;
  /** the prompt's exact tokens, counting (once) only what the limits left uncounted */
  countPrompt(): Promise<number>;
}

export interface LimitOptions {
  /** fills in a configured system prompt (FastGPT variables) before it is prepended */
  renderPrompt?: (prompt: string) => string;
  /** counts kept from a conversation's earlier requests */
  known?: KnownCounts;
  /** false: the history is never trimmed (an agent's tool call without its result breaks its
   *  conversation); a prompt over maxContext is refused with its count (docs/api.md#limits) */
  trim?: boolean;
}

/** A prompt over the model's context, with its numbers (dialects word it their way). */
export class ContextTooLong extends GatewayError {
  constructor(
    model: ModelConfig,
    take: string,
    /** the prompt's tokens (at least), and the most a prompt may take (one token is left to answer) */
    readonly promptTokens?: number,
    readonly maxPrompt = model.maxContext - 1,
  ) {
    super(400, "context_length_exceeded", `The system messages and the last user message ${take}; model ${model.model} allows ${model.maxContext} in all.`, { param: "messages" });
  }
}

export async function applyLimits(
  req: ChatRequest,
  messages: ChatMessage[],
  model: ModelConfig,
  app: AppConfig | undefined,
  opts: LimitOptions = {},
): Promise<LimitedChat> {
  // 1. Parts: an image, audio or a file to a model that does not take them is the caller's mistake,
  //    not something to drop silently.
  assertParts(messages, model);

  // 2. Default system prompt when the conversation has none.
  const withSystem = prependSystemPrompt(messages, model, app, opts.renderPrompt ?? ((prompt) => prompt));

  // 3. Temperature clamped to [0, maxTemperature].
  const wanted = req.temperature ?? app?.temperature;
  const temperature = wanted == null ? undefined : Math.min(Math.max(wanted, 0), model.maxTemperature);

  // 4. max_tokens clamped to maxResponse (absent: maxResponse).
  let maxTokens = Math.min(req.max_tokens ?? req.max_completion_tokens ?? app?.maxToken ?? model.maxResponse, model.maxResponse);

  // 5. Fast path: the byte bound already proves everything fits, so nothing needs counting. The
  //    tool definitions are counted as one more system message (never sent as one).
  const counted = req.tools === undefined ? withSystem : [...withSystem, toolsMessage(req.tools)];
  const sent = (kept: ChatMessage[]) => (counted === withSystem ? kept : kept.slice(0, -1));
  const parts = partCosts(model);
  const tally = () => createTally(counted, model.tokenizer, { known: opts.known, parts });
  const budget = model.maxContext - maxTokens;
  let bound = 0;
  for (const m of counted) bound += boundMessage(m, parts);
  if (bound <= budget) return { messages: withSystem, temperature, maxTokens, ...prompt(bound, () => tally().group(counted.keys())) };

  // 6. An agent's history is whole or refused; other chats trim it by whole rounds to fit maxContext - maxTokens.
  const { kept, group } = opts.trim === false ? await wholeOrRefused(counted, model, tally()) : await trimToFit(counted, budget, model, tally());

  // 7. max_tokens lowered to what the prompt leaves, when the prompt is over budget (it then is the
  //    system messages and the last user message alone).
  if (!(await group.fits(budget))) {
    const tokens = await group.count();
    maxTokens = Math.min(maxTokens, model.maxContext - tokens);
    if (maxTokens < 1) throw new ContextTooLong(model, `take ${tokens} tokens`, tokens);
  }
  return { messages: sent(kept), temperature, maxTokens, ...prompt(group.upper, () => group) };
}

/** The tool definitions as the model reads them: part of the prompt, counted like a system message
 *  (the Messages dialect's count_tokens counts them so too). */
export function toolsMessage(tools: unknown): ChatMessage {
  return { role: "system", content: JSON.stringify(tools) };
}

/** How far an agent's prompt over the context is counted (docs/api.md#limits): its refusal's figure
 *  is exact up to twice the context — Claude Code drops that much of its conversation when refused —
 *  and this bound past it: a 2 MB prompt is not counted to its end to be refused. */
export const countCeiling = (model: Pick<ModelConfig, "maxContext">) => 2 * model.maxContext;

/** A prompt's tokens, counted no further than `ceiling` (which a longer prompt is given as). */
export async function countToCeiling(group: TokenGroup, ceiling: number): Promise<number> {
  return (await group.fits(ceiling)) ? group.count() : ceiling;
}

/** Every message kept, or a refusal naming the prompt's count (up to countCeiling) when not even
 *  one answer token fits. */
async function wholeOrRefused(messages: ChatMessage[], model: ModelConfig, tally: Tally): Promise<{ kept: ChatMessage[]; group: TokenGroup }> {
  const group = tally.group(messages.keys());
  if (!(await group.fits(model.maxContext - 1))) {
    const ceiling = countCeiling(model);
    const tokens = await countToCeiling(group, ceiling);
    throw new ContextTooLong(model, `take ${tokens < ceiling ? "" : "at least "}${tokens} tokens`, tokens);
  }
  return { kept: messages, group };
}

/** The prompt's bound, and its exact count made (once) from the group `counted` gives. */
function prompt(bound: number, counted: () => TokenGroup): Pick<LimitedChat, "promptBound" | "countPrompt"> {
  let tokens: Promise<number> | undefined;
  return { promptBound: bound, countPrompt: () => (tokens ??= counted().count()) };
}

/** What a part the model takes may cost at most (docs/configuration.md#llmmodels). */
export function partCosts(model: ModelConfig): PartCosts {
  return { image_url: model.maxImageTokens, input_audio: model.maxAudioTokens, file: model.maxFileTokens };
}

const PART_NEEDS = [
  { type: "image_url", allowed: (m: ModelConfig) => m.vision, code: "vision_not_supported", what: "images" },
  { type: "input_audio", allowed: (m: ModelConfig) => m.audioInput, code: "audio_not_supported", what: "audio" },
  { type: "file", allowed: (m: ModelConfig) => m.fileInput, code: "file_not_supported", what: "files" },
] as const;

function assertParts(messages: ChatMessage[], model: ModelConfig): void {
  const refused = PART_NEEDS.filter((need) => !need.allowed(model));
  if (refused.length === 0) return;
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    for (const part of m.content) {
      const need = refused.find((n) => n.type === part.type);
      if (need) throw badRequest(need.code, `Model ${model.model} does not accept ${need.what}.`, `messages[${i}].content`);
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
 * Counts only what decides the outcome: whether the required part leaves room for one answer token,
 * then whether each round fits beside what is kept.
 */
async function trimToFit(
  messages: ChatMessage[],
  budget: number,
  model: ModelConfig,
  tally: Tally,
): Promise<{ kept: ChatMessage[]; group: TokenGroup }> {
  // The required part: at least one answer token must remain after it.
  let lastUser = messages.findLastIndex((m) => m.role === "user");
  if (lastUser < 0) lastUser = messages.length - 1;
  const ceiling = model.maxContext - 1;
  const required: number[] = [];
  messages.forEach((m, i) => {
    if (m.role === "system" || i >= lastUser) required.push(i);
  });
  const group = tally.group(required);
  if (!(await group.fits(ceiling))) throw new ContextTooLong(model, `take more than ${ceiling} tokens`);

  // Earlier rounds, newest first: [start, first) where start is a user message (or the first message).
  let first = lastUser;
  while (first > 0) {
    let start = first - 1;
    while (start > 0 && messages[start]!.role !== "user") start--;
    const indices: number[] = [];
    for (let i = start; i < first; i++) if (messages[i]!.role !== "system") indices.push(i);
    const round = tally.group(indices);
    if (!(await group.fitsWith(round, budget))) break;
    group.absorb(round);
    first = start;
  }
  return { kept: messages.filter((m, i) => m.role === "system" || i >= first), group };
}
