// Tokens and points of a rerank (docs/fleet.md#rerank). Counted (cl100k_base) as the query's tokens
// plus each document's, when the upstream reports none. The worst case a budget must hold is larger:
// a cross-encoder reads the query once per document, and vLLM reports exactly that (plus a few
// special tokens per pair). Its bound: the query's bytes once per document plus the documents' bytes
// (a token is never shorter than a byte); counted: the same with tokens for bytes.
import type { ReRankModelConfig } from "../config/schema.js";
import { computePoints } from "../tokens/points.js";
import { countTextAsync, createPacer } from "../tokens/counter.js";

/** Special tokens a cross-encoder adds around one query-document pair ([CLS] q [SEP] d [SEP], …). */
const PAIR_SPECIAL_TOKENS = 8;

/** At least the tokens any upstream can report for ranking `texts` against `query`. */
export function rerankTokenBound(query: string, texts: string[]): number {
  const perPair = Buffer.byteLength(query, "utf8") + PAIR_SPECIAL_TOKENS;
  let bound = texts.length * perPair;
  for (const text of texts) bound += Buffer.byteLength(text, "utf8");
  return bound;
}

/** The query's tokens and the documents' (all of them), counted once for both uses below. */
export interface RerankCount {
  query: number;
  documents: number;
}

/** Counts the query and each document, without stalling the event loop on long documents. */
export async function countRerank(query: string, texts: string[]): Promise<RerankCount> {
  const pacer = createPacer();
  const count = { query: await countTextAsync(query, "cl100k_base", { pacer }), documents: 0 };
  for (const text of texts) count.documents += await countTextAsync(text, "cl100k_base", { pacer });
  return count;
}

/** The tokens billed when the upstream reports none: the query's plus each document's. */
export const rerankTokens = (count: RerankCount): number => count.query + count.documents;

/** What a cross-encoder reads of `documents` documents, counted: the query's tokens and the special
 *  ones once per document, plus the documents' tokens. */
export const rerankReadTokens = (count: RerankCount, documents: number): number => documents * (count.query + PAIR_SPECIAL_TOKENS) + count.documents;

/** `charsPointsPrice` × tokens / 1000. */
export function rerankPoints(model: ReRankModelConfig, tokens: number): number {
  return computePoints({ inputPrice: 0, charsPointsPrice: model.charsPointsPrice }, tokens, 0);
}
