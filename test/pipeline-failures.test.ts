// The one pipeline's failure path (docs/architecture.md#pipeline; issue 21), the same for every kind:
// each step that can fail — the key, the body, the caller, the model, the cheap refusals, the
// kind's limits, the attempts, a stream cut after its first byte — answers in the kind's error
// shape with a fitting status, releases whatever budget it held, and writes a usage row exactly when
// a channel was reached (billing what was generated, no more).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startEmbeddingsUpstream, type EmbeddingsUpstream } from "./support/embeddings-upstream.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-pipeline-app-0001";
const BUDGETED = "sk-pipeline-budget-01";
const LIMITED = "sk-pipeline-qpm-00001";
const GLOBAL = "sk-pipeline-global-01";
let chatUp: Upstream;
let embedUp: EmbeddingsUpstream;
let gw: StartedGateway;

/** How one kind is asked, and how its errors look. */
interface Kind {
  name: string;
  path: string;
  body: (model: string, extra?: Record<string, unknown>) => Record<string, unknown>;
  model: string;
  /** the request that passes the limits of the small model "tiny" only when short */
  tooLong: Record<string, unknown>;
  /** the error's code in the kind's shape */
  code: (body: unknown) => string;
  streams: boolean;
}

const openAICode = (body: unknown) => (body as { error: { code: string } }).error.code;
const anthropicType = (body: unknown) => (body as { type: string; error: { type: string } }).error.type;
const longText = "many words ".repeat(400);

const KINDS: Kind[] = [
  {
    name: "chat",
    path: "/v1/chat/completions",
    model: "m",
    body: (model, extra) => ({ model, messages: [{ role: "user", content: "hi" }], ...extra }),
    tooLong: { model: "tiny", messages: [{ role: "user", content: longText }] },
    code: openAICode,
    streams: true,
  },
  {
    name: "embeddings",
    path: "/v1/embeddings",
    model: "e",
    body: (model) => ({ model, input: "hi" }),
    tooLong: { model: "e", input: longText },
    code: openAICode,
    streams: false,
  },
  {
    name: "messages",
    path: "/v1/messages",
    model: "m",
    body: (model, extra) => ({ model, max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...extra }),
    tooLong: { model: "tiny", max_tokens: 100, messages: [{ role: "user", content: longText }] },
    code: anthropicType,
    streams: true,
  },
  {
    name: "responses",
    path: "/v1/responses",
    model: "m",
    body: (model, extra) => ({ model, input: "hi", store: false, ...extra }),
    tooLong: { model: "tiny", input: longText, store: false },
    code: openAICode,
    streams: true,
  },
];

beforeAll(async () => {
  chatUp = await startUpstream({ usage: { prompt_tokens: 10, completion_tokens: 20 } });
  embedUp = await startEmbeddingsUpstream();
  gw = await startGateway({
    channels: [
      { name: "chat-up", baseUrl: chatUp.url, models: ["m", "tiny"] },
      { name: "embed-up", baseUrl: embedUp.url, models: ["e"] },
    ],
    llmModels: [
      { model: "m", maxContext: 4000, maxResponse: 1000, charsPointsPrice: 1 },
      { model: "tiny", maxContext: 300, maxResponse: 100, charsPointsPrice: 1 },
    ],
    vectorModels: [{ model: "e", maxToken: 300, charsPointsPrice: 1 }],
    routing: { maxAttempts: 1, breaker: { failures: 1000 } },
    apps: [
      { id: "a", model: "m", models: ["m", "tiny", "e"] },
      { id: "b", model: "m", models: ["m", "tiny", "e"], maxUsagePoints: 100 },
    ],
    apiKeys: [
      { name: "k", kind: "app", appId: "a", key: KEY },
      { name: "budgeted", kind: "app", appId: "b", key: BUDGETED },
      { name: "limited", kind: "app", appId: "a", key: LIMITED, qpm: 1 },
      { name: "g", kind: "global", key: GLOBAL },
    ],
  });
});
afterAll(async () => {
  await gw?.close();
  await chatUp?.close();
  await embedUp?.close();
});

const send = (kind: Kind, body: unknown, key: string | null = KEY, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}${kind.path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function failure(res: Response, status: number, kind: Kind, openAI: string, anthropic: string): Promise<void> {
  expect(res.status).toBe(status);
  const body = await res.json();
  expect(kind.code(body)).toBe(kind.name === "messages" ? anthropic : openAI);
}

const usageRows = async () => (await gw.store.summarizeUsage({ appId: "b" })).totals.requests;
const spent = () => gw.store.getSpent("app:b");

describe.each(KINDS)("the failure path of $name", (kind) => {
  it("1. the key: none, or unknown → 401 (before the body is read, but where share-link users may come without one)", async () => {
    await failure(await send(kind, kind.body(kind.model), null), 401, kind, "missing_api_key", "authentication_error");
    if (kind.name !== "chat") await failure(await send(kind, "not even json", null), 401, kind, "missing_api_key", "authentication_error");
    await failure(await send(kind, kind.body(kind.model), "sk-pipeline-unknown"), 401, kind, "invalid_api_key", "authentication_error");
  });

  it("2. the body: not JSON → 415, malformed → 400, too large → 413, a wrong field → 400", async () => {
    await failure(await send(kind, "{}", KEY, { "content-type": "text/plain" }), 415, kind, "unsupported_media_type", "invalid_request_error");
    await failure(await send(kind, "{not json"), 400, kind, "invalid_json", "invalid_request_error");
    await failure(await send(kind, { model: kind.model, pad: "x".repeat(3 * 1024 * 1024) }), 413, kind, "request_too_large", "request_too_large");
    await failure(await send(kind, { model: 42 }), 400, kind, "invalid_request", "invalid_request_error");
  });

  it("3. the caller: a global key → 403", async () => {
    await failure(await send(kind, kind.body(kind.model), GLOBAL), 403, kind, "app_key_required", "permission_error");
  });

  it("4. the model: unknown → 404", async () => {
    await failure(await send(kind, kind.body("no-such-model")), 404, kind, "model_not_found", "not_found_error");
  });

  it("5. the cheap refusals: a QPM window → 429 with Retry-After", async () => {
    await send(kind, kind.body(kind.model), LIMITED);
    const res = await send(kind, kind.body(kind.model), LIMITED);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    await failure(res, 429, kind, "rate_limit_exceeded", "rate_limit_error");
  });

  it("6. the kind's limits: too long → 400, nothing held, no usage row", async () => {
    const [rows, before] = [await usageRows(), await spent()];
    await failure(await send(kind, kind.tooLong, BUDGETED), 400, kind, "context_length_exceeded", "invalid_request_error");
    expect(await usageRows()).toBe(rows);
    expect(await spent()).toBe(before);
  });

  it("7. the attempts: the model server failing → 502, the hold released, a usage row of 502 and no points", async () => {
    chatUp.behave({ status: 500 });
    embedUp.behave({ status: 500 });
    try {
      const [rows, before] = [await usageRows(), await spent()];
      await failure(await send(kind, kind.body(kind.model), BUDGETED), 502, kind, "upstream_error", "api_error");
      expect(await usageRows()).toBe(rows + 1);
      expect(await spent()).toBe(before);
      // the hold was released: the whole budget is there for the next request
      chatUp.behave({ status: 200 });
      embedUp.behave({ status: 200 });
      expect((await send(kind, kind.body(kind.model), BUDGETED)).status).toBe(200);
    } finally {
      chatUp.behave({ status: 200 });
      embedUp.behave({ status: 200 });
    }
  });

  it.runIf(kind.streams)("8. a stream cut after its first byte: the kind's error event, never a clean end; the partial output billed", async () => {
    chatUp.behave({ chunks: 6, cutAfterChunks: 3, usage: false });
    try {
      const before = await spent();
      const res = await send(kind, kind.body(kind.model, { stream: true }), BUDGETED);
      expect(res.status).toBe(200);
      const text = await res.text();
      if (kind.name === "messages") {
        expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
        expect(text).not.toContain("message_stop");
      } else if (kind.name === "responses") {
        expect(text).toContain("response.failed");
        expect(text).not.toContain("response.completed");
      } else {
        expect(text).toMatch(/data: \{"error":\{[^}]*"code":"upstream_error"/);
        expect(text).not.toContain("[DONE]");
      }
      await expect.poll(spent).toBeGreaterThan(before);
    } finally {
      chatUp.behave({ chunks: 5, cutAfterChunks: null, usage: { prompt_tokens: 10, completion_tokens: 20 } });
    }
  });
});
