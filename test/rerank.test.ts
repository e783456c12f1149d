// Rerank (docs/fleet.md#rerank): the request checked field by field, the body every rerank server
// reads, the answer read from each real server's shape and given back sorted, cut and filled in,
// tokens counted when the upstream reports none. Through the gateway over real sockets: the calls
// FastGPT, LangChain's CohereRerank and Cohere's v2 client make, a model's own requestUrl, failover,
// a budget refusal, usage rows and metrics.
import { CohereRerank } from "@langchain/cohere";
import { CohereClient, CohereClientV2 } from "cohere-ai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReRankModelConfig } from "../src/config/schema.js";
import { readUpstreamRerank, rerankAnswer } from "../src/rerank/answer.js";
import { checkDocumentCount, documentTexts, parseRerankRequest } from "../src/rerank/request-schema.js";
import { countRerank, rerankPoints, rerankReadTokens, rerankTokenBound, rerankTokens } from "../src/rerank/tokens.js";
import { RERANK_PATH, rerankUpstreamBody } from "../src/rerank/upstream.js";
import { expectError } from "./support/fixtures.js";
import { FLEET_KEY, LISTED_KEY, REQUEST_AUTH, TIGHT_KEY, useFleet } from "./support/fleet.js";
import { pairTokens, startRerankUpstream, type RerankShape, type RerankUpstream } from "./support/rerank-upstream.js";
import { refusal } from "./support/refusal.js";

const MODEL: ReRankModelConfig = { model: "bge-reranker", name: "BGE", charsPointsPrice: 2, maxDocuments: 4 };
const DOCS = ["Paris is in France.", "Berlin is in Germany.", "The capital of France has many museums.", "Cats sleep a lot."];
const QUERY = "capital of France";

/** The refusal's fields, to compare whole. */
function refusalOf(fn: () => unknown): { status: number; code: string; param: string | null; message: string } {
  const { status, code, param, message } = refusal(fn);
  return { status, code, param, message };
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
    const r = refusalOf(() => parseRerankRequest(body));
    expect(r).toMatchObject({ status: 400, param });
    expect(r.message.replace(":", "")).toContain(message.replace(":", ""));
  });

  it("refuses more documents than the model's maxDocuments", () => {
    const req = parseRerankRequest({ model: "m", query: "q", documents: ["a", "b", "c", "d", "e"] });
    expect(refusalOf(() => checkDocumentCount(req, MODEL))).toEqual({
      status: 400,
      code: "too_many_documents",
      param: "documents",
      message: "documents: bge-reranker ranks at most 4 documents per request, got 5.",
    });
    expect(() => checkDocumentCount(parseRerankRequest({ model: "m", query: "q", documents: DOCS }), MODEL)).not.toThrow();
  });
});

describe("rerank upstream body", () => {
  it("sends plain strings, the configured name, top_n only when it cuts, no return_documents and no nulls", () => {
    const req = parseRerankRequest({ model: "alias", query: QUERY, documents: [{ text: "a" }, "b", "c"], top_n: 2, return_documents: false, max_chunks_per_doc: null, truncate_prompt_tokens: 64 });
    expect(rerankUpstreamBody(req, MODEL)).toEqual({ model: "bge-reranker", query: QUERY, documents: ["a", "b", "c"], top_n: 2, truncate_prompt_tokens: 64 });
    const all = parseRerankRequest({ model: "alias", query: QUERY, documents: ["a", "b"], top_n: 5 });
    expect(rerankUpstreamBody(all, MODEL)).not.toHaveProperty("top_n");
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
    expect(rerankTokens(await countRerank("hello world", ["hello", "world peace"]))).toBe(2 + 1 + 2);
    const bound = rerankTokenBound(QUERY, DOCS);
    expect(bound).toBeGreaterThanOrEqual(pairTokens(QUERY, DOCS));
    expect(bound).toBe(4 * (Buffer.byteLength(QUERY) + 8) + DOCS.reduce((s, d) => s + Buffer.byteLength(d), 0));
    expect(rerankPoints(MODEL, 1500)).toBe(3);
    expect(rerankReadTokens(await countRerank("hello world", ["hello", "world peace"]), 2)).toBe(2 * (2 + 8) + 1 + 2);
  });
});

describe("the test server's shapes", () => {
  let up: RerankUpstream;
  beforeAll(async () => {
    up = await startRerankUpstream();
  });
  afterAll(() => up.close());

  it.each<RerankShape>(["vllm", "jina", "cohere-v1", "cohere-v2", "xinference"])("reads the %s test server's answer over HTTP", async (shape) => {
    up.behave({ shape });
    const req = parseRerankRequest({ model: "alias", query: QUERY, documents: DOCS });
    const res = await request(`${up.url}/v1${RERANK_PATH}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(rerankUpstreamBody(req, MODEL)) });
    const scores = readUpstreamRerank(await res.body.json(), DOCS.length)!;
    expect(scores.results.map((r) => r.index).sort()).toEqual([0, 1, 2, 3]);
    expect(scores.tokens).toBe(shape === "cohere-v1" ? undefined : pairTokens(QUERY, DOCS));
  });
});

interface RerankBody {
  id: string;
  model: string;
  results: Array<{ index: number; relevance_score: number; document?: { text: string } }>;
  usage: { total_tokens: number };
  meta: { tokens: { input_tokens: number } };
}

describe("rerank through the gateway", () => {
  const f = useFleet();
  const rerank = (body: unknown, key?: string | null, path = "/v1/rerank") => f.post(path, body, key);

  it("answers FastGPT's call (POST /api/v1/rerank, strings, bearer): sorted, meta.tokens counted, a usage row", async () => {
    f.rerank[0].behave({ shape: "cohere-v1" }); // no usage upstream: the gateway counts
    const res = await rerank({ model: "bge-reranker", query: QUERY, documents: DOCS }, FLEET_KEY, "/api/v1/rerank");
    expect(res.status).toBe(200);
    const body = (await res.json()) as RerankBody;
    const tokens = rerankTokens(await countRerank(QUERY, DOCS));
    expect(body.results.map((r) => r.index)).toEqual([2, 0, 1, 3]);
    expect(body.results[0]!.document).toEqual({ text: DOCS[2] });
    expect(body).toMatchObject({ model: "bge-reranker", usage: { total_tokens: tokens }, meta: { tokens: { input_tokens: tokens } } });
    // the channel's key upstream, never the client's
    const sent = f.rerank[0].requests.at(-1)!;
    expect(sent).toMatchObject({ path: "/v1/rerank", headers: { authorization: "Bearer channel-key-rerank-a" } });
    expect(sent.body).toEqual({ model: "bge-reranker", query: QUERY, documents: DOCS });
    expect(f.rows).toEqual([expect.objectContaining({ appId: "fleet", model: "bge-reranker", channel: "rerank-a", inputTokens: tokens, outputTokens: 0, points: rerankPoints({ ...MODEL, charsPointsPrice: 2 }, tokens), status: 200 })]);
  });

  it("bills the upstream's own count when it gives one, cuts to top_n and leaves documents out when asked", async () => {
    const res = await rerank({ model: "bge-reranker", query: QUERY, documents: DOCS.map((text) => ({ text })), top_n: 2, return_documents: false });
    const body = (await res.json()) as RerankBody;
    expect(body.results).toEqual([
      { index: 2, relevance_score: 1 },
      { index: 0, relevance_score: expect.any(Number) },
    ]);
    expect(body.usage.total_tokens).toBe(pairTokens(QUERY, DOCS));
    expect(f.rows[0]!.inputTokens).toBe(pairTokens(QUERY, DOCS));
  });

  it("answers LangChain's CohereRerank (cohere-ai with a base URL), a Cohere model name resolved by an alias glob", async () => {
    const client = new CohereClient({ token: FLEET_KEY, environment: f.gw.url });
    const reranker = new CohereRerank({ client, model: "rerank-english-v3.0", topN: 2 });
    const docs = DOCS.map((pageContent, i) => ({ pageContent, metadata: { i } }));
    const kept = await reranker.compressDocuments(docs, QUERY);
    expect(kept.map((d) => d.metadata.i)).toEqual([2, 0]);
    expect(kept[0]!.metadata.relevanceScore).toBe(1);
    // the client's null field dropped, the configured model named
    expect(f.rerank[0].requests.at(-1)!.body).toEqual({ model: "bge-reranker", query: QUERY, documents: DOCS, top_n: 2 });
    expect(f.rows[0]).toMatchObject({ model: "bge-reranker", status: 200 });
  });

  it("answers Cohere's v2 client on /v2/rerank", async () => {
    const client = new CohereClientV2({ token: FLEET_KEY, environment: f.gw.url });
    const res = await client.rerank({ model: "bge-reranker", query: QUERY, documents: DOCS, topN: 3 });
    expect(res.results.map((r) => r.index)).toEqual([2, 0, 1]);
  });

  it("posts a model with its own requestUrl to that URL exactly, requestAuth as the bearer key, on its own channel", async () => {
    const res = await rerank({ model: "remote-reranker", query: QUERY, documents: DOCS.slice(0, 2) });
    expect(res.status).toBe(200);
    await res.json();
    expect(f.ownRerank.requests.at(-1)).toMatchObject({ path: "/custom/rerank?v=1", headers: { authorization: `Bearer ${REQUEST_AUTH}` } });
    expect(f.rows[0]).toMatchObject({ model: "remote-reranker", channel: "rerank:remote-reranker", status: 200 });
    f.ownRerank.behave({ status: 503 });
    await expectError(await rerank({ model: "remote-reranker", query: QUERY, documents: DOCS }), 502, "upstream_error");
    expect(f.rows[1]).toMatchObject({ channel: "rerank:remote-reranker", status: 502, points: 0 });
    expect(await f.metrics()).toContain('sluice_upstream_requests_total{channel="rerank:remote-reranker",model="remote-reranker",outcome="http_error"} 1');
  });

  it("fails over to the second channel when the first answers 503", async () => {
    f.rerank[0].behave({ status: 503 });
    const before = f.rerank[1].requests.length;
    const res = await rerank({ model: "bge-reranker", query: QUERY, documents: DOCS });
    expect(res.status).toBe(200);
    expect(((await res.json()) as RerankBody).results[0]!.index).toBe(2);
    expect(f.rerank[1].requests.length).toBe(before + 1);
    expect(f.rows).toEqual([expect.objectContaining({ channel: "rerank-b", status: 200 })]);
    const metrics = await f.metrics();
    expect(metrics).toContain('sluice_upstream_attempts_total{channel="rerank-a",outcome="retried"} 1');
    expect(metrics).toContain('sluice_upstream_attempts_total{channel="rerank-b",outcome="ok"} 1');
  });

  it("refuses a budget that cannot hold the worst case with 429 insufficient_quota, calling no model", async () => {
    const before = f.rerank[0].requests.length;
    // 2 points per 1,000 tokens: 0.01 points pay 5 tokens; a cross-encoder reads more than that
    await expectError(await rerank({ model: "bge-reranker", query: "q", documents: ["a"] }, TIGHT_KEY), 429, "insufficient_quota");
    expect(f.rerank[0].requests.length).toBe(before);
    expect(f.rows).toEqual([]);
    expect(await f.metrics()).toContain('sluice_budget_refusals_total{scope_kind="app"} 1');
  });

  it("refuses bad input in OpenAI's shape: no documents, too many, an unknown or forbidden model", async () => {
    expect((await expectError(await rerank({ model: "bge-reranker", query: QUERY, documents: [] }), 400, "invalid_request")).param).toBe("documents");
    const many = await expectError(await rerank({ model: "bge-reranker", query: QUERY, documents: Array(9).fill("doc") }), 400, "too_many_documents");
    expect(many).toMatchObject({ param: "documents", message: "documents: bge-reranker ranks at most 8 documents per request, got 9." });
    await expectError(await rerank({ model: "nope", query: QUERY, documents: DOCS }), 404, "model_not_found");
    // the listed app may use bge-reranker, not the other rerank model
    expect((await rerank({ model: "bge-reranker", query: QUERY, documents: DOCS }, LISTED_KEY)).status).toBe(200);
    await expectError(await rerank({ model: "remote-reranker", query: QUERY, documents: DOCS }, LISTED_KEY), 404, "model_not_found");
    await expectError(await rerank({ model: "bge-reranker", query: QUERY, documents: DOCS }, null), 401, "missing_api_key");
  });

  it('counts requests, points and latency under route="rerank"', async () => {
    f.rerank[0].behave({ shape: "jina" });
    await (await rerank({ model: "bge-reranker", query: QUERY, documents: DOCS })).json();
    await (await rerank({ model: "bge-reranker", query: QUERY, documents: DOCS }, FLEET_KEY, "/api/v1/rerank")).json();
    const text = await f.metrics();
    const points = 2 * rerankPoints({ ...MODEL, charsPointsPrice: 2 }, pairTokens(QUERY, DOCS));
    expect(text).toContain('sluice_requests_total{route="rerank",model="bge-reranker",app="fleet",status="200"} 2');
    expect(text).toContain(`sluice_route_points_total{route="rerank",model="bge-reranker",app="fleet"} ${points}`);
    expect(text).toContain('sluice_request_duration_seconds_count{route="rerank"} 2');
  });
});
