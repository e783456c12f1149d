// Token limits of an embeddings request: every input within the model's `maxToken` (docs/api.md#embeddings),
// none empty, at most MAX_INPUTS of them. Text is counted with cl100k_base; a token array counts as
// its length. Text whose UTF-8 length already proves it fits (a token is never shorter than a byte)
// is not counted: its bytes stand for its tokens in the bound a budget holds, and it is counted only
// when the upstream reports no usage or a budget cannot hold the bound.
import type { VectorModelConfig } from "../config/schema.js";
import { badRequest } from "../http/errors.js";
import { countTextAsync, createPacer, type Pacer } from "../tokens/counter.js";
import { checkInputCount, inputItems, isSingleInput, type EmbeddingInput, type InputItem } from "./request-schema.js";

const TOKENIZER = "cl100k_base";

/**
 * Refuses the request (400, `param` naming the input) when an input is empty or longer than
 * `maxToken`. Returns a bound of the inputs' total tokens: the bytes of text that fits by its bytes,
 * the count of text that had to be counted, the length of token arrays.
 */
export async function checkInputs(input: EmbeddingInput, model: VectorModelConfig): Promise<number> {
  const items = inputItems(input);
  if (items.length === 0) throw badRequest("invalid_request", "input must hold at least one input", "input");
  checkInputCount(items.length);
  const single = isSingleInput(input);
  let pacer: Pacer | undefined;
  let bound = 0;
  for (const [i, item] of items.entries()) {
    const param = single ? "input" : `input[${i}]`;
    if (item.length === 0) throw badRequest("invalid_request", `${param} must not be empty`, param);
    const bytes = typeof item === "string" ? Buffer.byteLength(item, "utf8") : item.length;
    if (bytes <= model.maxToken) {
      bound += bytes;
      continue;
    }
    const tokens = await countItem(item, (pacer ??= createPacer()), model.maxToken);
    if (tokens > model.maxToken) {
      throw badRequest("context_length_exceeded", `${param} is too long: ${model.model} takes at most ${model.maxToken} tokens per input.`, param);
    }
    bound += tokens;
  }
  return bound;
}

/** The inputs' total tokens. */
export async function countInputs(input: EmbeddingInput): Promise<number> {
  const pacer = createPacer();
  let total = 0;
  for (const item of inputItems(input)) total += await countItem(item, pacer);
  return total;
}

/** Tokens of one input; text counting stops once past `stopAbove`. */
function countItem(item: InputItem, pacer: Pacer, stopAbove?: number): Promise<number> {
  return typeof item === "string" ? countTextAsync(item, TOKENIZER, { pacer, stopAbove }) : Promise.resolve(item.length);
}
