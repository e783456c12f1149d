// Rerank (docs/fleet.md#rerank): the request checked field by field, the body every rerank server
// reads, the answer read from each real server's shape and given back sorted, cut and filled in,
// tokens counted when the upstream reports none. Over real sockets: a vLLM-shaped server, and the
// calls FastGPT and LangChain's CohereRerank make, through a small server built of these functions.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { CohereRerank } from "@langchain/cohere";
import { CohereClient } from "cohere-ai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReRankModelConfig } from "../src/config/schema.js";
import { GatewayError } from "../src/http/errors.js";
import { readUpstreamRerank, rerankAnswer } from "../src/rerank/answer.js";
import { checkDocumentCount, documentTexts, parseRerankRequest } from "../src/rerank/request-schema.js";
import { countRerankTokens, rerankPoints, rerankTokenBound } from "../src/rerank/tokens.js";
import { RERANK_PATH, rerankTarget, rerankUpstreamBody } from "../src/rerank/upstream.js";
import { pairTokens, startRerankUpstream, type RerankShape, type RerankUpstream } from "./support/rerank-upstream.js";

const MODEL: ReRankModelConfig = { model: "bge-reranker", name: "BGE", charsPointsPrice: 2, maxDocuments: 4 };
const DOCS = ["Paris is in France.", "Berlin is in Germany.", "The capital of France has many museums.", "Cats sleep a lot."];
const QUERY = "capital of France";

function refusal(fn: () => unknown): { status: number; code: string; param: string | null; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return { status: err.status, code: err.code, param: err.param, message: err.message };
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("rerank request", () => {
  it("accepts strings or {text} objects, and keeps other fields for the upstream", () => {
    const req = parseRerankRequest({ model: "m", query: "q", documents: ["a", { text: "b", title: "t" }], top_n: 1, truncate_prompt_tokens: 512 });
    expect(documentTexts(req)).toEqual(["a", "b"]);
    expect(req.truncate_prompt_tokens).toBe(512);
  });

  it.each([
    [{ model: "m", query: "q", documents: [] }, "documents", "documents must hold at least one item"],
    [{ model: "m", query: "", documents: ["a"] }, "query", "query: must not be empty"],
    [{ model: "m", documents: ["a"] }, "query", "query is required"],
    [{ model: "m", query: "q", documents: [1] }, "documents[0]", "documents[0]: expected a string or an object, got a number"],
    [{ model: "m", query: "q", documents: [{ txt: "a" }] }, "documents[0].text", "documents[0].text is required"],
    [{ model: "m", query: "q", documents: ["a"], top_n: -1 }, "top_n", "top_n: must be at least 0"],
    [{ query: "q", documents: ["a"] }, "model", "model is required"],
  ])("refuses %j with a 400 naming %s", (body, param, message) => {
    const r = refusal(() => parseRerankRequest(body));
    expect(r).toMatchObject({ status: 400, param });
    expect(r.message.replace(":", "")).toContain(message.replace(":", ""));
  });

  it("refuses more documents than the model's maxDocuments", () => {
    const req = parseRerankRequest({ model: "m", query: "q", documents: ["a", "b", "c", "d", "e"] });
    expect(refusal(() => checkDocumentCount(req, MODEL))).toEqual({
      status: 400,
      code: "too_many_documents",
      param: "documents",
      message: "documents: bge-reranker ranks at most 4 documents per request, got 5.",
    });
    expect(() => checkDocumentCount(parseRerankRequest({ model: "m", query: "q", documents: DOCS }), MODEL)).not.toThrow();
  });
});

describe("rerank upstream body and target", () => {
  it("sends plain strings, the configured name, top_n only when it cuts, no return_documents and no nulls", () => {
    const req = parseRerankRequest({ model: "alias", query: QUERY, documents: [{ text: "a" }, "b", "c"], top_n: 2, return_documents: false, max_chunks_per_doc: null, truncate_prompt_tokens: 64 });
    expect(rerankUpstreamBody(req, MODEL)).toEqual({ model: "bge-reranker", query: QUERY, documents: ["a", "b", "c"], top_n: 2, truncate_prompt_tokens: 64 });
    const all = parseRerankRequest({ model: "alias", query: QUERY, documents: ["a", "b"], top_n: 5 });
    expect(rerankUpstreamBody(all, MODEL)).not.toHaveProperty("top_n");
  });

  it("goes to the channel's /v1/rerank, or to requestUrl with requestAuth as a bearer key", () => {
    expect(rerankTarget(MODEL)).toEqual({ kind: "channel", path: RERANK_PATH });
    expect(rerankTarget({ ...MODEL, requestUrl: "http://127.0.0.1:1/rerank", requestAuth: "rr-key" })).toEqual({
      kind: "url",
      url: "http://127.0.0.1:1/rerank",
      headers: { authorization: "Bearer rr-key" },
    });
    expect(rerankTarget({ ...MODEL, requestUrl: "http://127.0.0.1:1/rerank" })).toMatchObject({ headers: {} });
  });
});

describe("rerank answer", () => {
  const scores = [
    { index: 0, relevance_score: 0.2 },
    { index: 1, relevance_score: 0.9 },
    { index: 2, relevance_score: 0.2 },
    { index: 3, relevance_score: 0.5 },
  ];

  it.each<[string, unknown, number | undefined]>([
    ["vLLM", { id: "x", model: "m", usage: { prompt_tokens: 7, total_tokens: 7 }, results: [{ index: 1, document: { text: "b" }, relevance_score: 0.9 }] }, 7],
    ["Jina", { model: "m", usage: { total_tokens: 5 }, results: [{ index: 1, document: { text: "b" }, relevance_score: 0.9 }] }, 5],
    ["Cohere v1", { id: "c", results: [{ index: 1, relevance_score: 0.9 }], meta: { billed_units: { search_units: 1 } } }, undefined],
    ["Cohere v2", { id: "c", results: [{ index: 1, relevance_score: 0.9 }], meta: { tokens: { input_tokens: 9, output_tokens: 0 } } }, 9],
    ["Xinference", { id: "x", results: [{ index: 1, relevance_score: 0.9, document: null }], meta: { tokens: { input_tokens: 3 } } }, 3],
    ["TEI", [{ index: 1, score: 0.9 }], undefined],
    ["a data list", { data: [{ index: 1, relevance_score: 0.9 }] }, undefined],
  ])("reads %s's shape", (_, answer, tokens) => {
    expect(readUpstreamRerank(answer, 4)).toEqual({ results: [{ index: 1, relevance_score: 0.9 }], tokens });
  });

  it.each<[string, unknown]>([
    ["no list", { id: "x" }],
    ["an index out of range", { results: [{ index: 4, relevance_score: 1 }] }],
    ["a repeated index", { results: [{ index: 1, relevance_score: 1 }, { index: 1, relevance_score: 0.5 }] }],
    ["a score that is not a number", { results: [{ index: 1, relevance_score: "high" }] }],
    ["a negative index", [{ index: -1, score: 1 }]],
  ])("refuses an answer with %s", (_, answer) => {
    expect(readUpstreamRerank(answer, 4)).toBeUndefined();
  });

  it("sorts by score (ties keep the earlier document first), cuts to top_n, fills in documents", () => {
    const a = rerankAnswer(scores, { id: "rr-1", model: "alias", topN: 3, returnDocuments: undefined, texts: DOCS, tokens: 12 });
    expect(a).toEqual({
      id: "rr-1",
      model: "alias",
      results: [
        { index: 1, relevance_score: 0.9, document: { text: DOCS[1] } },
        { index: 3, relevance_score: 0.5, document: { text: DOCS[3] } },
        { index: 0, relevance_score: 0.2, document: { text: DOCS[0] } },
      ],
      usage: { total_tokens: 12 },
      meta: { tokens: { input_tokens: 12, output_tokens: 0 } },
    });
    const bare = rerankAnswer(scores, { id: "rr-2", model: "alias", topN: 0, returnDocuments: false, texts: DOCS, tokens: 1 });
    expect(bare.results.map((r) => r.index)).toEqual([1, 3, 0, 2]);
    expect(bare.results.every((r) => !("document" in r))).toBe(true);
  });

  it("counts the query and each document, bounds what a cross-encoder can report, prices per 1,000 tokens", async () => {
    expect(await countRerankTokens("hello world", ["hello", "world peace"])).toBe(2 + 1 + 2);
    const bound = rerankTokenBound(QUERY, DOCS);
    expect(bound).toBeGreaterThanOrEqual(pairTokens(QUERY, DOCS));
    expect(bound).toBe(4 * (Buffer.byteLength(QUERY) + 8) + DOCS.reduce((s, d) => s + Buffer.byteLength(d), 0));
    expect(rerankPoints(MODEL, 1500)).toBe(3);
  });
});

/** A server made of the rerank functions and nothing else, forwarding to `upstream`: what the
 *  pipeline will do, minus keys, budgets and failover. */
async function startRerankRelay(upstream: () => string, model: ReRankModelConfig): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      try {
        const parsed = parseRerankRequest(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        checkDocumentCount(parsed, model);
        const target = rerankTarget(model);
        const url = target.kind === "url" ? target.url : `${upstream()}${target.path}`;
        const headers = { "content-type": "application/json", ...(target.kind === "url" ? target.headers : {}) };
        const up = await request(url, { method: "POST", headers, body: JSON.stringify(rerankUpstreamBody(parsed, model)) });
        const scores = readUpstreamRerank(await up.body.json(), parsed.documents.length);
        if (!scores) throw new Error("bad upstream reply");
        const texts = documentTexts(parsed);
        const tokens = scores.tokens ?? (await countRerankTokens(parsed.query, texts));
        const answer = rerankAnswer(scores.results, { id: "rerank-test", model: parsed.model, topN: parsed.top_n, returnDocuments: parsed.return_documents, texts, tokens });
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      } catch (err) {
        const e = err instanceof GatewayError ? err : new GatewayError(502, "upstream_error", String(err));
        res.writeHead(e.status, { "content-type": "application/json" }).end(JSON.stringify(e.toBody()));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("rerank over real sockets", () => {
  let up: RerankUpstream;
  let relay: { url: string; server: Server };
  beforeAll(async () => {
    up = await startRerankUpstream();
    relay = await startRerankRelay(() => up.url, { ...MODEL, maxDocuments: 100 });
  });
  afterAll(async () => {
    relay.server.close();
    await up.close();
  });

  it.each<RerankShape>(["vllm", "jina", "cohere-v1", "cohere-v2", "xinference"])("reads the %s test server's answer over HTTP", async (shape) => {
    up.behave({ shape });
    const req = parseRerankRequest({ model: "alias", query: QUERY, documents: DOCS });
    const res = await request(`${up.url}${RERANK_PATH}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(rerankUpstreamBody(req, MODEL)) });
    const scores = readUpstreamRerank(await res.body.json(), DOCS.length)!;
    expect(scores.results.map((r) => r.index).sort()).toEqual([0, 1, 2, 3]);
    expect(scores.tokens).toBe(shape === "cohere-v1" ? undefined : pairTokens(QUERY, DOCS));
  });

  it("answers FastGPT's call (POST {base}/rerank, strings, bearer) with results and meta.tokens", async () => {
    up.behave({ shape: "cohere-v1" }); // no usage upstream: the relay counts
    const res = await request(`${relay.url}/api/v1/rerank`, {
      method: "POST",
      headers: { authorization: "Bearer sk-fastgpt-app", "content-type": "application/json" },
      body: JSON.stringify({ model: "bge-reranker", query: QUERY, documents: DOCS }),
    });
    const body = (await res.body.json()) as { results: Array<{ index: number; relevance_score: number }>; meta: { tokens: { input_tokens: number } } };
    expect(res.statusCode).toBe(200);
    expect(body.results.map((r) => r.index)).toEqual([2, 0, 1, 3]);
    expect(body.meta.tokens.input_tokens).toBe(await countRerankTokens(QUERY, DOCS));
    expect(up.requests.at(-1)!.body).toEqual({ model: "bge-reranker", query: QUERY, documents: DOCS });
  });

  it("answers LangChain's CohereRerank (cohere-ai client with a base URL) with the best documents first", async () => {
    up.behave({ shape: "vllm" });
    const client = new CohereClient({ token: "sk-langchain-app", environment: relay.url });
    const reranker = new CohereRerank({ client, model: "bge-reranker", topN: 2 });
    const docs = DOCS.map((pageContent, i) => ({ pageContent, metadata: { i } }));
    const kept = await reranker.compressDocuments(docs, QUERY);
    expect(kept.map((d) => d.metadata.i)).toEqual([2, 0]);
    expect(kept[0]!.metadata.relevanceScore).toBe(1);
    // the client's own request: top_n and Cohere's null field pass the relay's schema
    expect(up.requests.at(-1)!.body).toEqual({ model: "bge-reranker", query: QUERY, documents: DOCS, top_n: 2 });
  });

  it("posts to a model's requestUrl with its requestAuth, and refuses too many documents before any call", async () => {
    const own = await startRerankRelay(() => "http://127.0.0.1:9", { ...MODEL, requestUrl: `${up.url}/custom/rerank`, requestAuth: "rr-secret" });
    try {
      const before = up.requests.length;
      const res = await request(`${own.url}/v1/rerank`, { method: "POST", body: JSON.stringify({ model: "bge-reranker", query: QUERY, documents: DOCS.slice(0, 2) }) });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
      expect(up.requests.at(-1)).toMatchObject({ path: "/custom/rerank", headers: { authorization: "Bearer rr-secret" } });
      const many = await request(`${own.url}/v1/rerank`, { method: "POST", body: JSON.stringify({ model: "bge-reranker", query: QUERY, documents: [...DOCS, "one more"] }) });
      expect(many.statusCode).toBe(400);
      expect(((await many.body.json()) as { error: { code: string } }).error.code).toBe("too_many_documents");
      expect(up.requests.length).toBe(before + 1);
    } finally {
      own.server.close();
    }
  });
});
