// Calls with no HTTP request behind them (docs/architecture.md#calls): a chat and an embeddings
// call run through the one metered pipeline from headers, path and body — no H3Event, no socket to
// the gateway — get the answer, the usage row and the budget effect an HTTP call gets. (Before:
// runMetered took only an H3Event; nothing could run a call without one.)
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { UsageRow } from "../src/store/types.js";
import { createStore } from "../src/store/index.js";
import { startEmbeddingsUpstream, type EmbeddingsUpstream } from "./support/embeddings-upstream.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-calls-without-http-01";
let chat: Upstream;
let embed: EmbeddingsUpstream;
let gw: StartedGateway;
const rows: UsageRow[] = [];

beforeAll(async () => {
  [chat, embed] = await Promise.all([startUpstream(), startEmbeddingsUpstream()]);
  const store = createStore({ driver: "memory" });
  const record = store.recordUsage.bind(store);
  store.recordUsage = (row, scopes) => (rows.push(row), record(row, scopes));
  const channel = (name: string, baseUrl: string, models: string[]) => ({ name, baseUrl, models, healthCheck: { intervalMs: 0 } });
  gw = await startGateway(
    {
      channels: [channel("chat", chat.url, ["m"]), channel("embed", embed.url, ["e"])],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500, charsPointsPrice: 1 }],
      vectorModels: [{ model: "e", charsPointsPrice: 1 }],
      routing: { maxAttempts: 1 },
      apps: [{ id: "a", model: "m", models: ["m", "e"], maxUsagePoints: 1_000_000 }],
      apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
    },
    { store },
  );
});
afterAll(async () => {
  await gw?.close();
  await gw?.store.close();
  await Promise.all([chat, embed].map((u) => u?.close()));
});

const headers = { "content-type": "application/json", authorization: `Bearer ${KEY}` };
const CASES = [
  { kind: "chat" as const, path: "/v1/chat/completions", body: { model: "m", messages: [{ role: "user", content: "hi" }] } },
  { kind: "embeddings" as const, path: "/v1/embeddings", body: { model: "e", input: "hello there" } },
];
/** what an answer is, without what differs between any two calls */
const stable = (body: Record<string, unknown>) => ({ ...body, id: undefined, created: undefined });
const rowOf = (row: UsageRow) => ({ model: row.model, channel: row.channel, inputTokens: row.inputTokens, outputTokens: row.outputTokens, points: row.points, status: row.status, endpoint: row.endpoint, appId: row.appId, keyName: row.keyName });

describe("a metered call with no HTTP request", () => {
  for (const c of CASES) {
    it(`answers ${c.kind} as over HTTP: the same answer, usage row and budget spent`, async () => {
      const spent = () => gw.store.getSpent("app:a");
      const before = await spent();
      const res = await fetch(`${gw.url}${c.path}`, { method: "POST", headers, body: JSON.stringify(c.body) });
      const overHttp = (await res.json()) as Record<string, unknown>;
      expect(res.status).toBe(200);
      const afterHttp = await spent();
      const httpRow = rows.at(-1)!;

      const answer = await gw.gateway.call(c.kind, { headers, path: c.path, body: c.body });
      expect(answer.status).toBe(200);
      expect(answer.headers["content-type"]).toMatch(/application\/json/);
      expect(stable(answer.body as Record<string, unknown>)).toEqual(stable(overHttp));
      const memoryRow = rows.at(-1)!;
      expect(memoryRow).not.toBe(httpRow);
      expect(rowOf(memoryRow)).toEqual(rowOf(httpRow));
      expect(memoryRow.requestId).toBe(answer.facts.requestId);
      expect(httpRow.points).toBeGreaterThan(0);
      expect((await spent()) - afterHttp).toBe(afterHttp - before);
    });
  }

  it("is refused as over HTTP: a wrong key is a 401 answer, no usage row", async () => {
    const count = rows.length;
    const answer = await gw.gateway.call("chat", { headers: { authorization: "Bearer sk-nobody-at-all-000" }, path: "/v1/chat/completions", body: CASES[0]!.body });
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ error: { code: "invalid_api_key" } });
    expect(rows.length).toBe(count);
  });

  it("stops when its signal aborts: settled as a client abort", async () => {
    chat.behave({ firstByteDelayMs: 2_000 });
    try {
      const ac = new AbortController();
      const sent = chat.requests.length;
      const answer = gw.gateway.call("chat", { headers, path: "/v1/chat/completions", body: CASES[0]!.body, signal: ac.signal });
      await vi.waitFor(() => expect(chat.requests.length).toBe(sent + 1));
      ac.abort();
      const got = await answer;
      expect(got.status).toBe(499);
      expect(rows.at(-1)!.status).toBe(499);
    } finally {
      chat.behave({ firstByteDelayMs: 0 });
    }
  });
});
