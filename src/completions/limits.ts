// A model's limits on a legacy completion (docs/fleet.md#completions), as on chat: `temperature`
// clamped to [0, maxTemperature], `max_tokens` clamped to maxResponse (absent: maxResponse) and
// lowered so the longest prompt (with its suffix) and the answer fit in maxContext. A raw prompt has
// no history to trim: one that leaves no room for an answer is refused (400
// context_length_exceeded). Text whose bytes already prove it fits is not counted. The upstream gets
// OpenAI's completion fields and the model's `passThrough` ones only, as on chat: never a field that
// sets the answer's length under another name than max_tokens.
import type { ModelConfig } from "../config/schema.js";
import { GatewayError, badRequest } from "../http/errors.js";
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

/** OpenAI's completion fields a model may be sent, besides model, max_tokens and temperature (which
 *  the gateway sets). `best_of` multiplies the answers generated: the output bound counts it. */
const OPENAI_FIELDS = ["prompt", "suffix", "stream", "stream_options", "n", "best_of", "echo", "logprobs", "stop", "top_p", "presence_penalty", "frequency_penalty", "logit_bias", "seed", "user"] as const;

export async function applyCompletionLimits(req: CompletionsRequest, model: ModelConfig): Promise<LimitedCompletion> {
  const prompts = promptList(req.prompt);
  const suffix = req.suffix ?? "";
  // every generation can write max_tokens, so their number per prompt is bounded like chat's choices
  for (const field of ["n", "best_of"] as const) {
    const asked = req[field];
    if (asked != null && asked > model.maxChoices) throw badRequest("invalid_request", `${field}: ${model.model} writes at most ${model.maxChoices} answers per prompt.`, field);
  }

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
  const body = upstreamBody(req, model, maxTokens, temperature);
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

/** The body a completions model gets: the allowed fields, the limited values. A stream always asks
 *  for usage, so tokens are the model's own count (the chunk is hidden from a client that did not ask). */
export function upstreamBody(req: CompletionsRequest, model: ModelConfig, maxTokens: number, temperature: number | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = { model: model.model };
  for (const field of OPENAI_FIELDS) if (req[field] != null) body[field] = req[field];
  for (const field of model.passThrough) if (req[field] !== undefined && !(field in body)) body[field] = req[field];
  body.max_tokens = maxTokens;
  if (temperature !== undefined) body.temperature = temperature;
  if (req.stream) body.stream_options = { ...(req.stream_options ?? {}), include_usage: true };
  return body;
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
