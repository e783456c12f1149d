// vLLM's `priority` on the kinds that pass a client's other fields through (docs/routing.md#priority-and-fairness):
// embeddings and rerank never forward the client's own `priority` — on a channel without
// `forwardPriority` the engine gets none (vLLM started without `--scheduling-policy priority` refuses
// any: 400), on one with it the gateway's (the caller's configured priority, negated) — while their
// other fields still pass through. Over real sockets: a gateway in front of embeddings and rerank
// servers, two of which refuse any body carrying `priority`, each recording what it was sent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddingsUpstream, type EmbeddingsUpstream } from "./support/embeddings-upstream.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startRerankUpstream, type RerankUpstream } from "./support/rerank-upstream.js";

const KEY = "sk-prio-field-0001";

let strictEmbeddings: EmbeddingsUpstream;
let schedulingEmbeddings: EmbeddingsUpstream;
let strictRerank: RerankUpstream;
let schedulingRerank: RerankUpstream;
let gw: StartedGateway;

beforeAll(async () => {
  strictEmbeddings = await startEmbeddingsUpstream({ refusePriority: true });
  schedulingEmbeddings = await startEmbeddingsUpstream();
  strictRerank = await startRerankUpstream({ refusePriority: true });
  schedulingRerank = await startRerankUpstream();
  const channel = (name: string, url: string, models: string[], forwardPriority: boolean) => ({ name, baseUrl: url, models, forwardPriority, healthCheck: { intervalMs: 0 } });
  gw = await startGateway({
    channels: [
      { name: "echo", type: "echo", models: ["m"] },
      channel("strict-emb", strictEmbeddings.url, ["emb"], false),
      channel("sched-emb", schedulingEmbeddings.url, ["emb-sched"], true),
      channel("strict-rr", strictRerank.url, ["rr"], false),
      channel("sched-rr", schedulingRerank.url, ["rr-sched"], true),
    ],
    llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
    vectorModels: [{ model: "emb" }, { model: "emb-sched" }],
    reRankModels: [{ model: "rr" }, { model: "rr-sched" }],
    apps: [{ id: "a", model: "m", models: ["m", "emb", "emb-sched", "rr", "rr-sched"], priority: 3 }],
    apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
  });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([strictEmbeddings, schedulingEmbeddings, strictRerank, schedulingRerank].map((u) => u.close()));
});

const post = (path: string, body: unknown) =>
  fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` }, body: JSON.stringify(body) });

/** What a client may add: a priority of its own, and fields the engine reads. */
const EXTRA = { priority: -100, truncate_prompt_tokens: 8, user: "u-1" };

describe("embeddings", () => {
  it("sends no priority to a channel without forwardPriority, the client's other fields still (before: 400 upstream_rejected)", async () => {
    const res = await post("/v1/embeddings", { model: "emb", input: "hello", ...EXTRA });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.text();
    const sent = strictEmbeddings.requests.at(-1)!;
    expect(sent).not.toHaveProperty("priority");
    expect(sent).toMatchObject({ model: "emb", input: "hello", truncate_prompt_tokens: 8, user: "u-1" });
  });

  it("sends the gateway's priority, not the client's, to a channel with forwardPriority", async () => {
    const res = await post("/v1/embeddings", { model: "emb-sched", input: "hello", ...EXTRA });
    expect(res.status).toBe(200);
    await res.text();
    expect(schedulingEmbeddings.requests.at(-1)).toMatchObject({ priority: -3, truncate_prompt_tokens: 8, user: "u-1" });
  });
});

describe("rerank", () => {
  const ask = { query: "capital of France", documents: ["Paris is in France.", "Cats sleep a lot."] };

  it("sends no priority to a channel without forwardPriority, the client's other fields still (before: 400 upstream_rejected)", async () => {
    const res = await post("/v1/rerank", { model: "rr", ...ask, ...EXTRA });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.text();
    const sent = strictRerank.requests.at(-1)!.body;
    expect(sent).not.toHaveProperty("priority");
    expect(sent).toMatchObject({ model: "rr", truncate_prompt_tokens: 8, user: "u-1" });
  });

  it("sends the gateway's priority, not the client's, to a channel with forwardPriority", async () => {
    const res = await post("/v1/rerank", { model: "rr-sched", ...ask, ...EXTRA });
    expect(res.status).toBe(200);
    await res.text();
    expect(schedulingRerank.requests.at(-1)!.body).toMatchObject({ priority: -3, truncate_prompt_tokens: 8, user: "u-1" });
  });
});
