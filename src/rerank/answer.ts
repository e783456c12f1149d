// A rerank answer (docs/fleet.md#rerank): the scores read from whatever shape the upstream gave,
// then the client's answer — sorted by score, cut to `top_n`, documents filled in from the request.
//
// Shapes read: `results: [{index, relevance_score}]` (vLLM, Jina, Cohere v1/v2, Xinference; `score`
// accepted for `relevance_score`), the same list under `data`, and TEI's bare list `[{index, score}]`.
// Tokens: `usage.total_tokens` (vLLM, Jina), else `usage.prompt_tokens`, else `meta.tokens.input_tokens`
// (Xinference, Cohere v2); Cohere's `billed_units` are search units, not tokens, and are not read.

export interface RerankScore {
  index: number;
  relevance_score: number;
}

export interface UpstreamRerank {
  results: RerankScore[];
  /** the upstream's own count of the tokens it ranked, when it gave one */
  tokens?: number;
}

export interface RerankResult extends RerankScore {
  document?: { text: string };
}

/** The answer the client gets. `meta.tokens` is what FastGPT reads for its own usage records. */
export interface RerankAnswer {
  id: string;
  model: string;
  results: RerankResult[];
  usage: { total_tokens: number };
  meta: { tokens: { input_tokens: number; output_tokens: number } };
}

/**
 * The scores of a parsed upstream answer ranking `documents` documents, or undefined when it is no
 * rerank answer: no result list, an index out of range or repeated, a score that is not a number.
 */
export function readUpstreamRerank(answer: unknown, documents: number): UpstreamRerank | undefined {
  const list = Array.isArray(answer) ? answer : isObject(answer) ? (answer.results ?? answer.data) : undefined;
  if (!Array.isArray(list)) return undefined;
  const seen = new Set<number>();
  const results: RerankScore[] = [];
  for (const item of list) {
    if (!isObject(item)) return undefined;
    const index = item.index;
    const score = item.relevance_score ?? item.score;
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= documents || seen.has(index as number)) return undefined;
    if (typeof score !== "number" || !Number.isFinite(score)) return undefined;
    seen.add(index as number);
    results.push({ index: index as number, relevance_score: score });
  }
  return { results, tokens: isObject(answer) ? upstreamTokens(answer) : undefined };
}

function upstreamTokens(answer: Record<string, unknown>): number | undefined {
  const usage = isObject(answer.usage) ? answer.usage : {};
  const meta = isObject(answer.meta) && isObject(answer.meta.tokens) ? answer.meta.tokens : {};
  for (const value of [usage.total_tokens, usage.prompt_tokens, meta.input_tokens]) {
    if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  }
  return undefined;
}

export interface AnswerOptions {
  id: string;
  /** the model name the client asked for */
  model: string;
  topN: number | null | undefined;
  /** absent: true (Jina's default; vLLM always returns them) */
  returnDocuments: boolean | null | undefined;
  /** the request's documents, for the results' `document` */
  texts: string[];
  tokens: number;
}

/** The client's answer: best score first (ties: the earlier document first), at most `topN`. */
export function rerankAnswer(scores: RerankScore[], opts: AnswerOptions): RerankAnswer {
  const sorted = [...scores].sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  const kept = opts.topN ? sorted.slice(0, opts.topN) : sorted;
  const withDocuments = opts.returnDocuments ?? true;
  const results = kept.map((r): RerankResult =>
    withDocuments ? { index: r.index, relevance_score: r.relevance_score, document: { text: opts.texts[r.index]! } } : { index: r.index, relevance_score: r.relevance_score },
  );
  return {
    id: opts.id,
    model: opts.model,
    results,
    usage: { total_tokens: opts.tokens },
    meta: { tokens: { input_tokens: opts.tokens, output_tokens: 0 } },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);
