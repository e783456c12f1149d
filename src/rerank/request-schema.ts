// The rerank request body (docs/fleet.md#rerank), Jina's and Cohere's shape: `model`, `query`,
// `documents` (strings, or objects with a `text`), `top_n`, `return_documents`. Other fields (vLLM's
// `truncate_prompt_tokens`, …) pass through to the upstream untouched, except `priority` (./upstream.ts).
import { z } from "zod";
import type { ReRankModelConfig } from "../config/schema.js";
import { badRequest } from "../http/errors.js";
import { modelName, parseBody } from "../http/validation.js";

const documentSchema = z.union([z.string(), z.looseObject({ text: z.string() })]);

export const rerankRequestSchema = z.looseObject({
  model: modelName(),
  query: z.string().min(1),
  // bounded by the largest maxDocuments first (parseRerankRequest), by the model's once it is known
  documents: z.array(documentSchema).min(1),
  /** how many of the best results to return; 0 or absent: all (vLLM reads 0 as all) */
  top_n: z.number().int().nonnegative().nullish(),
  /** whether each result carries its document's text (Jina's default: yes) */
  return_documents: z.boolean().nullish(),
});

export type RerankRequest = z.infer<typeof rerankRequestSchema>;

/** The validated request, or a 400 naming the first wrong field; more documents than `maxDocuments`
 *  (the largest of any rerank model) are refused before one is looked at. */
export function parseRerankRequest(body: unknown, maxDocuments = Number.POSITIVE_INFINITY): RerankRequest {
  const documents = (body as { documents?: unknown } | null)?.documents;
  if (Array.isArray(documents)) checkCount(documents.length, maxDocuments, "A rerank model ranks");
  return parseBody(rerankRequestSchema, body);
}

/** The documents' texts, in the request's order. */
export function documentTexts(req: RerankRequest): string[] {
  return req.documents.map((d) => (typeof d === "string" ? d : d.text));
}

/** 400 when the request holds more documents than the model's `maxDocuments`. */
export function checkDocumentCount(req: RerankRequest, model: ReRankModelConfig): void {
  checkCount(req.documents.length, model.maxDocuments, `${model.model} ranks`);
}

function checkCount(count: number, max: number, who: string): void {
  if (count > max) throw badRequest("too_many_documents", `documents: ${who} at most ${max} documents per request, got ${count}.`, "documents");
}
