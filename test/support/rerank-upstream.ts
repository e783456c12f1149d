// A small real rerank server (node:http) for tests. POST …/rerank (any path ending so, whatever the
// query: `/v1/rerank` of a channel, or a model's `requestUrl`) scores each document by the share of the query's words it
// holds, and answers in the shape of a real server: vLLM (default), Jina, Cohere v1 or v2, Xinference,
// or TEI's bare list. It records what it was sent and answers an error status on demand — or, as vLLM
// started without `--scheduling-policy priority`, 400 to any body carrying a `priority`.
import { PRIORITY_REFUSAL } from "./embeddings-upstream.js";
import { startJsonServer } from "./json-server.js";

export type RerankShape = "vllm" | "jina" | "cohere-v1" | "cohere-v2" | "xinference" | "tei";

export interface RerankBehaviour {
  shape: RerankShape;
  /** 200 answers scores; anything else an OpenAI-style error body with this status */
  status: number;
  /** refuse (400) any body with a `priority` field, as vLLM without the priority policy */
  refusePriority?: boolean;
}

export interface RecordedRerank {
  path: string;
  /** header names in lower case */
  headers: Record<string, string>;
  body: { model?: string; query: string; documents?: string[]; texts?: string[]; top_n?: number; [key: string]: unknown };
}

export interface RerankUpstream {
  url: string;
  requests: RecordedRerank[];
  behave(change: Partial<RerankBehaviour>): void;
  close(): Promise<void>;
}

/** The score the server gives `doc` for `query`: the share of the query's words found in it. */
export function wordScore(query: string, doc: string): number {
  const words = query.toLowerCase().match(/\w+/g) ?? [];
  const have = new Set(doc.toLowerCase().match(/\w+/g) ?? []);
  return words.length === 0 ? 0 : words.filter((w) => have.has(w)).length / words.length;
}

/** What vLLM reports: every pair's words plus its special tokens, the query once per document. */
export function pairTokens(query: string, docs: string[]): number {
  const words = (t: string) => (t.match(/\w+/g) ?? []).length;
  return docs.reduce((sum, d) => sum + words(query) + words(d) + 3, 0);
}

export async function startRerankUpstream(initial: Partial<RerankBehaviour> = {}): Promise<RerankUpstream> {
  let b: RerankBehaviour = { shape: "vllm", status: 200, ...initial };
  const requests: RecordedRerank[] = [];
  const server = await startJsonServer("/rerank", (json, res, req) => {
    const body = json as RecordedRerank["body"];
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    requests.push({ path: req.url ?? "/", headers, body });
    if (b.refusePriority && "priority" in body) {
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify(PRIORITY_REFUSAL));
      return;
    }
    if (b.status !== 200) {
      res.writeHead(b.status, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `rerank failed with ${b.status}` } }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer(b.shape, body)));
  });
  return { url: server.url, requests, behave: (change) => (b = { ...b, ...change }), close: server.close };
}

function answer(shape: RerankShape, body: RecordedRerank["body"]): unknown {
  const docs = (shape === "tei" ? body.texts : body.documents) ?? [];
  const scored = docs.map((text, index) => ({ index, text, score: wordScore(body.query, text) }));
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  const top = body.top_n ? scored.slice(0, body.top_n) : scored;
  const tokens = pairTokens(body.query, docs);
  switch (shape) {
    case "vllm":
      return {
        id: "rerank-vllm-1",
        model: body.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
        results: top.map((r) => ({ index: r.index, document: { text: r.text, multi_modal: null }, relevance_score: r.score })),
      };
    case "jina":
      return { model: body.model, usage: { total_tokens: tokens }, results: top.map((r) => ({ index: r.index, document: { text: r.text }, relevance_score: r.score })) };
    case "cohere-v1":
      return { id: "c1", results: top.map((r) => ({ index: r.index, relevance_score: r.score })), meta: { api_version: { version: "1" }, billed_units: { search_units: 1 } } };
    case "cohere-v2":
      return {
        id: "c2",
        results: top.map((r) => ({ index: r.index, relevance_score: r.score })),
        meta: { api_version: { version: "2" }, billed_units: { search_units: 1 }, tokens: { input_tokens: tokens, output_tokens: 0 } },
      };
    case "xinference":
      return {
        id: "x1",
        results: top.map((r) => ({ index: r.index, relevance_score: r.score, document: null })),
        meta: { api_version: null, billed_units: null, tokens: { input_tokens: tokens, output_tokens: 0 }, warnings: null },
      };
    case "tei":
      return top.map((r) => ({ index: r.index, score: r.score }));
  }
}
