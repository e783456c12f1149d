// A model's limits on a legacy completion (docs/fleet.md#completions), as on chat: `temperature`
// clamped to [0, maxTemperature], `max_tokens` clamped to maxResponse (absent: maxResponse) and
// lowered so the longest prompt (with its suffix) and the answer fit in maxContext. A raw prompt has
// no history to trim: one that leaves no room for an answer is refused (400
// context_length_exceeded). Text whose bytes already prove it fits is not counted.
import type { ModelConfig } from "../config/schema.js";
import { GatewayError } from "../http/errors.js";
import { countTextAsync, createPacer, type Pacer } from "../tokens/counter.js";
import { promptList, type CompletionsRequest, type Prompt } from "./request-schema.js";

export interface LimitedCompletion {
  /** the upstream body: the client's, with the configured model name and the limited values */
  body: Record<string, unknown>;
  maxTokens: number;
  temperature: number | undefined;
  /** answers the upstream writes: prompts × max(n, best_of) (best_of are generated, then n kept) */
  generations: number;
  /** at least the prompt tokens of the whole request (every prompt with its suffix) */
  promptBound: number;
  /** at most the completion tokens the upstream can generate */
  outputBound: number;
  /** the prompt tokens of the whole request, counted once, when no usage is reported */
  countPrompt(): Promise<number>;
}

export async function applyCompletionLimits(req: CompletionsRequest, model: ModelConfig): Promise<LimitedCompletion> {
  const prompts = promptList(req.prompt);
  const suffix = req.suffix ?? "";

  // 1. Temperature clamped to [0, maxTemperature].
  const temperature = req.temperature == null ? undefined : Math.min(Math.max(req.temperature, 0), model.maxTemperature);

  // 2. max_tokens clamped to maxResponse (absent: maxResponse).
  let maxTokens = Math.min(req.max_tokens ?? model.maxResponse, model.maxResponse);

  // 3. The longest prompt and the answer within maxContext: bytes bound tokens from above, so only a
  //    prompt whose bytes do not prove it fits is counted (and only until it is proven too long).
  const pacer = createPacer();
  const suffixBytes = Buffer.byteLength(suffix, "utf8");
  let bound = 0;
  let longest = 0;
  for (const [i, p] of prompts.entries()) {
    let tokens = promptBytes(p) + suffixBytes;
    if (tokens + maxTokens > model.maxContext) tokens = await countPrompt(p, suffix, model, pacer, model.maxContext);
    // room for one answer token, unless the client asked for none (a prompt scored, not continued)
    if (tokens + Math.min(maxTokens, 1) > model.maxContext) throw promptTooLong(model, prompts.length > 1 ? `prompt[${i}]` : "prompt", tokens);
    bound += tokens;
    longest = Math.max(longest, tokens);
  }
  maxTokens = Math.min(maxTokens, model.maxContext - longest);

  const generations = prompts.length * Math.max(req.n ?? 1, req.best_of ?? 1);
  const body: Record<string, unknown> = { ...req, model: model.model, max_tokens: maxTokens };
  if (temperature !== undefined) body.temperature = temperature;
  let counted: Promise<number> | undefined;
  return {
    body,
    maxTokens,
    temperature,
    generations,
    promptBound: bound,
    outputBound: generations * maxTokens,
    countPrompt: () => (counted ??= countAll(prompts, suffix, model)),
  };
}

function promptBytes(p: Prompt): number {
  return typeof p === "string" ? Buffer.byteLength(p, "utf8") : p.length;
}

/** Tokens of one prompt and the suffix; text counting stops once past `stopAbove`. */
async function countPrompt(p: Prompt, suffix: string, model: ModelConfig, pacer: Pacer, stopAbove?: number): Promise<number> {
  const head = typeof p === "string" ? await countTextAsync(p, model.tokenizer, { pacer, stopAbove }) : p.length;
  if (suffix.length === 0 || (stopAbove !== undefined && head > stopAbove)) return head;
  return head + (await countTextAsync(suffix, model.tokenizer, { pacer, stopAbove }));
}

async function countAll(prompts: Prompt[], suffix: string, model: ModelConfig): Promise<number> {
  const pacer = createPacer();
  let total = 0;
  for (const p of prompts) total += await countPrompt(p, suffix, model, pacer);
  return total;
}

function promptTooLong(model: ModelConfig, param: string, tokens: number): GatewayError {
  return new GatewayError(
    400,
    "context_length_exceeded",
    `${param} takes ${tokens} tokens or more; model ${model.model} allows ${model.maxContext} in all, the answer included.`,
    { param },
  );
}
