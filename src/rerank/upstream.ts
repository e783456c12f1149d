// What a rerank request sends upstream (docs/fleet.md#rerank): the body every rerank server reads
// (vLLM, Xinference, Jina, Cohere v1 and v2: documents as plain strings), and where it goes — the
// channel's `/v1/rerank`, or the model's own `requestUrl` with `requestAuth` as its bearer key, as
// FastGPT calls it.
import type { ReRankModelConfig } from "../config/schema.js";
import { documentTexts, type RerankRequest } from "./request-schema.js";

/** The channel path a rerank is posted to (a channel baseUrl ending in `/v1` is not doubled). */
export const RERANK_PATH = "/v1/rerank";

export type RerankTarget =
  /** posted to `RERANK_PATH` of the channels serving the model, with each channel's key */
  | { kind: "channel"; path: typeof RERANK_PATH }
  /** posted to this URL alone; `headers` carries the model's own key, when it has one */
  | { kind: "url"; url: string; headers: Record<string, string> };

export function rerankTarget(model: ReRankModelConfig): RerankTarget {
  if (!model.requestUrl) return { kind: "channel", path: RERANK_PATH };
  // FastGPT's `requestAuth` is the bare key: it adds "Bearer " itself
  const headers: Record<string, string> = model.requestAuth ? { authorization: `Bearer ${model.requestAuth}` } : {};
  return { kind: "url", url: model.requestUrl, headers };
}

// The gateway fills each result's document from the request itself, so no upstream is asked for
// documents (Cohere v2 refuses `return_documents`; vLLM always sends them back anyway).
const NOT_FORWARDED = new Set(["model", "query", "documents", "top_n", "return_documents"]);

/** The upstream body: the configured model name, the query, the documents' texts, `top_n` when it
 *  cuts the list, and the client's other fields (null ones dropped: LangChain sends
 *  `max_chunks_per_doc: null`, which a strict server may refuse). */
export function rerankUpstreamBody(req: RerankRequest, model: ReRankModelConfig): Record<string, unknown> {
  const body: Record<string, unknown> = { model: model.model, query: req.query, documents: documentTexts(req) };
  if (req.top_n && req.top_n < req.documents.length) body.top_n = req.top_n;
  for (const [key, value] of Object.entries(req)) {
    if (!NOT_FORWARDED.has(key) && value !== null && value !== undefined) body[key] = value;
  }
  return body;
}
