// The legacy completions request body (docs/fleet.md#completions), OpenAI's `POST /v1/completions`
// as autocomplete and fill-in-the-middle tools send it: `prompt` (a string, strings, token ids, or
// lists of token ids), `suffix` (the text after the cursor), `max_tokens`, `temperature`, `stop`,
// `stream`, `n`, `echo`, `logprobs`, … Fields the gateway does not read pass through untouched.
import { z } from "zod";
import { badRequest } from "../http/errors.js";
import { listOf, modelName, parseBody, stopStrings } from "../http/validation.js";

// What one request may hold (docs/api.md#request-bounds): OpenAI's bounds
const MAX_PROMPTS = 2048;
const MAX_STOP = 4;

const tokenIds = z.array(z.number().int().nonnegative());

export const completionsRequestSchema = z.looseObject({
  model: modelName(),
  // emptiness is checked after: a union would word an empty array as the wrong type
  prompt: z.union([z.string(), listOf(z.string(), MAX_PROMPTS), tokenIds, listOf(tokenIds, MAX_PROMPTS)]),
  suffix: z.string().nullish(),
  // 0 is OpenAI's way to score a prompt (echo + logprobs) without generating
  max_tokens: z.number().int().nonnegative().nullish(),
  temperature: z.number().nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  best_of: z.number().int().min(1).max(128).nullish(),
  echo: z.boolean().nullish(),
  logprobs: z.number().int().nonnegative().nullish(),
  stop: stopStrings(MAX_STOP).nullish(),
});

export type CompletionsRequest = z.infer<typeof completionsRequestSchema>;
/** One prompt: text, or token ids. */
export type Prompt = string | number[];

/** The validated request, or a 400 naming the first wrong field. */
export function parseCompletionsRequest(body: unknown): CompletionsRequest {
  const req = parseBody(completionsRequestSchema, body);
  if (Array.isArray(req.prompt)) {
    if (req.prompt.length === 0) throw badRequest("invalid_request", "prompt must hold at least one item", "prompt");
    req.prompt.forEach((p, i) => {
      if (Array.isArray(p) && p.length === 0) throw badRequest("invalid_request", `prompt[${i}] must hold at least one token`, `prompt[${i}]`);
    });
  }
  return req;
}

/** The prompts as a list: one per group of `n` choices in the answer. */
export function promptList(prompt: CompletionsRequest["prompt"]): Prompt[] {
  if (typeof prompt === "string") return [prompt];
  if (typeof prompt[0] === "number") return [prompt as number[]];
  return prompt as Prompt[];
}
