// What a rerank request sends upstream (docs/fleet.md#rerank): the body every rerank server reads
// (vLLM, Xinference, Jina, Cohere v1 and v2: documents as plain strings), posted to `/rerank` under
// the channel's `/v1` — or, for a model with its own `requestUrl`, to that URL exactly: the channel
// the gateway makes for it (src/config/fleet.ts) posts there whatever the path.
import type { ReRankModelConfig } from "../config/schema.js";
import { PRIORITY_FIELD } from "../upstream/forward-priority.js";
import { documentTexts, type RerankRequest } from "./request-schema.js";

/** Under the channel's `/v1`. */
export const RERANK_PATH = "/rerank";

// The gateway fills each result's document from the request itself, so no upstream is asked for
// documents (Cohere v2 refuses `return_documents`; vLLM always sends them back anyway). A client's
// `priority` never reaches an engine: the gateway writes its own, on a channel with forwardPriority
// (docs/routing.md#priority-and-fairness).
const NOT_FORWARDED = new Set(["model", "query", "documents", "top_n", "return_documents", PRIORITY_FIELD]);

/** The upstream body: the configured model name, the query, the documents' texts, `top_n` when it
 *  cuts the list, and the client's other fields but `priority` (null ones dropped: LangChain sends
 *  `max_chunks_per_doc: null`, which a strict server may refuse). */
export function rerankUpstreamBody(req: RerankRequest, model: ReRankModelConfig): Record<string, unknown> {
  const body: Record<string, unknown> = { model: model.model, query: req.query, documents: documentTexts(req) };
  if (req.top_n && req.top_n < req.documents.length) body.top_n = req.top_n;
  for (const [key, value] of Object.entries(req)) {
    if (!NOT_FORWARDED.has(key) && value !== null && value !== undefined) body[key] = value;
  }
  return body;
}
