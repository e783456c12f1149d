// The embeddings request body (docs/api.md#embeddings): OpenAI's `model`, `input` (a string, an array of
// strings, an array of token ids, or an array of such arrays), `encoding_format` and `dimensions`.
// Other OpenAI fields (`user`, …) pass through untouched, except a client's `priority` (./spec.ts).
import { z } from "zod";
import { badRequest } from "../http/errors.js";
import { modelName, parseBody } from "../http/validation.js";

/** OpenAI's own limit of inputs per request. */
export const MAX_INPUTS = 2048;

const tokenIds = z.array(z.number().int().nonnegative());

export const embeddingsRequestSchema = z.looseObject({
  model: modelName(),
  // emptiness and count are checked with the token limits, where the message can name the input
  input: z.union([z.string(), z.array(z.string()), tokenIds, z.array(tokenIds)]),
  encoding_format: z.enum(["float", "base64"]).optional(),
  dimensions: z.number().int().positive().max(16384).optional(),
});

export type EmbeddingsRequest = z.infer<typeof embeddingsRequestSchema>;
export type EmbeddingInput = EmbeddingsRequest["input"];
/** One input to embed: text, or token ids */
export type InputItem = string | number[];

/** The validated request, or a 400 naming the first wrong field; a list of more than MAX_INPUTS
 *  inputs is refused before one is looked at (one list of token ids is one input). */
export function parseEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  const input = (body as { input?: unknown } | null)?.input;
  if (Array.isArray(input) && typeof input[0] !== "number") checkInputCount(input.length);
  return parseBody(embeddingsRequestSchema, body);
}

export function checkInputCount(count: number): void {
  if (count > MAX_INPUTS) throw badRequest("invalid_request", `input: at most ${MAX_INPUTS} inputs per request, got ${count}`, "input");
}

/** True when the request sent one input (a string or one token array) rather than a list. */
export function isSingleInput(input: EmbeddingInput): input is string | number[] {
  return typeof input === "string" || (input.length > 0 && typeof input[0] === "number");
}

/** The inputs as a list, one item per vector to return. */
export function inputItems(input: EmbeddingInput): InputItem[] {
  return isSingleInput(input) ? [input] : (input as InputItem[]);
}
