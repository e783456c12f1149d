// POST /v1/rerank (also /api/v1/rerank and Cohere's /v2/rerank) as a spec of the metered pipeline
// (docs/fleet.md#rerank): a query and documents in Jina's or Cohere's shape, scored by a rerank model
// of a channel (or of its own requestUrl); the answer sorted, cut to top_n, documents filled in.
// Billed by tokens: the upstream's count, else the query's and each document's.
import { randomUUID } from "node:crypto";
import type { ReRankModelConfig } from "../config/schema.js";
import { jsonResponse } from "../http/json.js";
import type { Caller } from "../metered/caller.js";
import { appAllowsListed, resolveModel, type Aliases } from "../metered/models.js";
import { budgeted, type WorstCase } from "../metered/quota.js";
import type { MeteredSpec, PlanBase } from "../metered/spec.js";
import { badUpstreamReply } from "../upstream/errors.js";
import { readJsonReply } from "../upstream/read.js";
import { readUpstreamRerank, rerankAnswer, type UpstreamRerank } from "./answer.js";
import { checkDocumentCount, documentTexts, parseRerankRequest, type RerankRequest } from "./request-schema.js";
import { countRerank, rerankPoints, rerankReadTokens, rerankTokenBound, rerankTokens, type RerankCount } from "./tokens.js";
import { RERANK_PATH, rerankUpstreamBody } from "./upstream.js";

interface RerankPlan extends PlanBase {
  body: string;
  texts: string[];
  /** the query's and the documents' tokens, counted the first time they are asked for */
  tokens: () => Promise<number>;
}

export interface RerankSpecDeps {
  rerankModels: Map<string, ReRankModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
}

const isAnything = (v: unknown): v is unknown => v !== undefined;

export function createRerankSpec(deps: RerankSpecDeps): MeteredSpec<RerankRequest, ReRankModelConfig, RerankPlan, UpstreamRerank> {
  // before the model is known, a request may hold as many documents as the most any model ranks
  const maxDocuments = Math.max(0, ...[...deps.rerankModels.values()].map((m) => m.maxDocuments));
  return {
    what: "Rerank",
    parse: ({ body }) => parseRerankRequest(body, maxDocuments),
    model: (req, caller) => resolveModel(deps.rerankModels, deps.aliases, req.model, (m) => appAllowsListed(caller.app, m), deps.serves, "rerank model"),
    least: (model) => rerankPoints(model, 1),
    async prepare({ req, caller, model }) {
      checkDocumentCount(req, model);
      const texts = documentTexts(req);
      // counted once, if at all: for a budget the bound does not fit, and for an upstream that reports no usage
      let counted: Promise<RerankCount> | undefined;
      const count = () => (counted ??= countRerank(req.query, texts));
      const tokens = async () => rerankTokens(await count());
      return { body: JSON.stringify(rerankUpstreamBody(req, model)), texts, tokens, worstCase: worstCase(caller, model, req.query, texts, count) };
    },
    async attempt(client, plan, { model, cancel }) {
      const reply = await client.post({ path: RERANK_PATH, body: plan.body, signal: cancel, model: model.model });
      const scores = readUpstreamRerank(await readJsonReply(reply, model.model, isAnything), plan.texts.length);
      if (!scores) throw badUpstreamReply(model.model);
      return scores;
    },
    async respond(scores, plan, { req, model }) {
      const tokens = scores.tokens ?? (await plan.tokens());
      const answer = rerankAnswer(scores.results, { id: `rerank-${randomUUID()}`, model: req.model, topN: req.top_n, returnDocuments: req.return_documents, texts: plan.texts, tokens });
      return { used: { inputTokens: tokens, points: rerankPoints(model, tokens) }, reply: () => jsonResponse(answer) };
    },
  };
}

/** The most a rerank can cost: what a cross-encoder reads (the query once per document), bounded by
 *  bytes, or counted when a budget cannot hold that bound. */
function worstCase(caller: Caller, model: ReRankModelConfig, query: string, texts: string[], count: () => Promise<RerankCount>): WorstCase | number {
  if (!budgeted(caller.limits, { tokens: true })) return 0;
  const bound = rerankTokenBound(query, texts);
  return {
    bound: rerankPoints(model, bound),
    tokens: { bound },
    counted: async () => {
      const read = rerankReadTokens(await count(), texts.length);
      return { most: rerankPoints(model, read), tokens: { most: read } };
    },
  };
}
