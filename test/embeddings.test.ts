// POST /v1/embeddings and /api/v1/embeddings over real sockets (docs/api.md#embeddings,
// docs/configuration.md#vectormodels): the openai SDK against the echo channel and a real upstream,
// maxToken per input, keys and app permissions, failover, usage rows and points, budgets and QPM, metrics
// and the request log.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/config/load.js";
import { silentObserver, type RequestRecord } from "../src/observability/observer.js";
import { countText } from "../src/tokens/counter.js";
import { ECHO_DIMENSIONS } from "../src/demo/echo-channel.js";
import { fromBase64, startEmbeddingsUpstream, UPSTREAM_VECTOR, type EmbeddingsUpstream } from "./support/embeddings-upstream.js";
import { expectError } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";

const APP_KEY = "sk-emb-app-key-0001";
const CHAT_ONLY_KEY = "sk-emb-chat-only-0001";
const OPEN_KEY = "sk-emb-open-app-0001";
const GLOBAL_KEY = "sk-emb-global-key-0001";

let primary: EmbeddingsUpstream;
let backup: EmbeddingsUpstream;
let gw: StartedGateway | undefined;
let records: RequestRecord[] = [];

/** Chat model m and the vector models emb-echo (echo channel, maxToken 20) and emb-up (two upstreams). */
function config(overrides: Record<string, unknown> = {}) {
  return {
    channels: [
      { name: "echo", type: "echo", models: ["m", "emb-echo"] },
      { name: "primary", baseUrl: primary.url, key: "channel-key-emb-0001", models: ["emb-up"], priority: 2, healthCheck: { intervalMs: 0 } },
      { name: "backup", baseUrl: `${backup.url}/v1`, models: ["emb-up"], priority: 1, healthCheck: { intervalMs: 0 } },
    ],
    llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
    vectorModels: [
      { model: "emb-echo", name: "Echo embedding", maxToken: 20, charsPointsPrice: 2 },
      { model: "emb-up", inputPrice: 5 },
    ],
    apps: [
      { id: "a", model: "m", models: ["m", "emb-echo", "emb-up"] },
      { id: "chat-only", model: "m", models: ["m"] },
      { id: "open", model: "m" },
    ],
    apiKeys: [
      { name: "k-a", kind: "app", appId: "a", key: APP_KEY },
      { name: "k-chat-only", kind: "app", appId: "chat-only", key: CHAT_ONLY_KEY },
      { name: "k-open", kind: "app", appId: "open", key: OPEN_KEY },
      { name: "ops", kind: "global", key: GLOBAL_KEY },
    ],
    routing: { maxAttempts: 3, breaker: { failures: 100 } },
    ...overrides,
  };
}

async function start(overrides: Record<string, unknown> = {}): Promise<StartedGateway> {
  gw = await startGateway(config(overrides), { observerExtra: { ...silentObserver, requestFinished: (r) => records.push(r) } });
  return gw;
}

const sdk = (key = APP_KEY, base = "/v1") => new OpenAI({ apiKey: key, baseURL: `${gw!.url}${base}`, maxRetries: 0 });

function embed(body: unknown, key: string | null = APP_KEY, path = "/v1/embeddings"): Promise<Response> {
  return fetch(gw!.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
}

interface EmbeddingsBody {
  object: string;
  model: string;
  data: Array<{ object: string; index: number; embedding: number[] | string }>;
  usage: { prompt_tokens: number; total_tokens: number };
}

async function embedOk(body: unknown, key = APP_KEY): Promise<EmbeddingsBody> {
  const res = await embed(body, key);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as EmbeddingsBody;
}

const metrics = async () => (await fetch(`${gw!.url}/metrics`)).text();

beforeAll(async () => {
  [primary, backup] = await Promise.all([startEmbeddingsUpstream(), startEmbeddingsUpstream()]);
});
afterAll(async () => {
  await Promise.all([primary.close(), backup.close()]);
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  records = [];
  for (const u of [primary, backup]) {
    u.requests.length = 0;
    u.behave({ status: 200, promptTokens: 42, retryAfter: undefined });
  }
});

describe("openai SDK embeddings.create", () => {
  it("embeds a string with the echo channel: one deterministic vector, usage counted", async () => {
    await start();
    const first = await sdk().embeddings.create({ model: "emb-echo", input: "hello world" });
    expect(first.object).toBe("list");
    expect(first.data).toHaveLength(1);
    expect(first.data[0]!.index).toBe(0);
    expect(first.data[0]!.embedding).toHaveLength(ECHO_DIMENSIONS);
    expect(first.usage).toEqual({ prompt_tokens: countText("hello world"), total_tokens: countText("hello world") });
    const again = await sdk().embeddings.create({ model: "emb-echo", input: "hello world" });
    expect(again.data[0]!.embedding).toEqual(first.data[0]!.embedding);
    const other = await sdk().embeddings.create({ model: "emb-echo", input: "goodbye" });
    expect(other.data[0]!.embedding).not.toEqual(first.data[0]!.embedding);
  });

  it("embeds an array of strings in order, usage the sum of the inputs, through /api/v1 too", async () => {
    await start();
    const inputs = ["first input", "the second one", "third"];
    const res = await sdk(APP_KEY, "/api/v1").embeddings.create({ model: "emb-echo", input: inputs });
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    const single = await sdk().embeddings.create({ model: "emb-echo", input: "the second one" });
    expect(res.data[1]!.embedding).toEqual(single.data[0]!.embedding);
    const tokens = inputs.reduce((sum, text) => sum + countText(text), 0);
    expect(res.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
  });

  it("gets an upstream's vectors with the upstream's usage", async () => {
    await start();
    const res = await sdk().embeddings.create({ model: "emb-up", input: ["a", "b"] });
    expect(res.data.map((d) => d.embedding)).toEqual([UPSTREAM_VECTOR, UPSTREAM_VECTOR]);
    expect(res.usage).toEqual({ prompt_tokens: 42, total_tokens: 42 });
    // the SDK asks for base64 and decodes it itself
    expect(primary.requests[0]).toMatchObject({ model: "emb-up", input: ["a", "b"], encoding_format: "base64" });
  });
});

describe("the request and the answer", () => {
  it("answers base64 from the echo channel: the same floats as encoding_format float", async () => {
    await start();
    const floats = await embedOk({ model: "emb-echo", input: "same text", encoding_format: "float" });
    const packed = await embedOk({ model: "emb-echo", input: "same text", encoding_format: "base64" });
    expect(typeof packed.data[0]!.embedding).toBe("string");
    const decoded = fromBase64(packed.data[0]!.embedding as string);
    const expected = floats.data[0]!.embedding as number[];
    expect(decoded).toHaveLength(expected.length);
    decoded.forEach((v, i) => expect(v).toBeCloseTo(expected[i]!, 6));
  });

  it("honours dimensions on the echo channel and passes every field to an upstream", async () => {
    await start();
    const res = await embedOk({ model: "emb-echo", input: "x", dimensions: 64, encoding_format: "float" });
    expect(res.data[0]!.embedding).toHaveLength(64);
    const norm = Math.hypot(...(res.data[0]!.embedding as number[]));
    expect(norm).toBeCloseTo(1, 6);
    await embedOk({ model: "emb-up", input: "x", dimensions: 64, encoding_format: "float", user: "u-1" });
    expect(primary.requests[0]).toEqual({ model: "emb-up", input: "x", dimensions: 64, encoding_format: "float", user: "u-1" });
  });

  it("forces usage: counted when the upstream reports none, token arrays counting their length", async () => {
    await start();
    primary.behave({ promptTokens: false });
    const res = await embedOk({ model: "emb-up", input: [[1, 2, 3], [4, 5]] });
    expect(res.usage).toEqual({ prompt_tokens: 5, total_tokens: 5 });
    expect(res.model).toBe("emb-up");
    expect((await embedOk({ model: "emb-up", input: [7, 8, 9, 10] })).usage.prompt_tokens).toBe(4);
  });

  it("refuses bodies that are not OpenAI embeddings requests with 400 naming the field", async () => {
    await start();
    const cases: Array<[unknown, string]> = [
      [{ input: "x" }, "model"],
      [{ model: "emb-echo" }, "input"],
      [{ model: "emb-echo", input: 5 }, "input"],
      [{ model: "emb-echo", input: [] }, "input"],
      [{ model: "emb-echo", input: "" }, "input"],
      [{ model: "emb-echo", input: ["a", ""] }, "input[1]"],
      [{ model: "emb-echo", input: [[1, 2], []] }, "input[1]"],
      [{ model: "emb-echo", input: "x", encoding_format: "hex" }, "encoding_format"],
      [{ model: "emb-echo", input: "x", dimensions: 0 }, "dimensions"],
      [{ model: "emb-echo", input: "x", dimensions: 1.5 }, "dimensions"],
    ];
    for (const [body, param] of cases) {
      const error = await expectError(await embed(body), 400, "invalid_request");
      expect(error.param, JSON.stringify(body)).toBe(param);
      expect(error.message).toContain(param);
    }
    const mixed = await expectError(await embed({ model: "emb-echo", input: ["a", 3] }), 400, "invalid_request");
    expect(mixed.param).toMatch(/^input/);
    await expectError(await embed([1, 2]), 400, "invalid_request");
  });
});

describe("maxToken per input", () => {
  it("refuses each input over maxToken with 400 naming its index; the upstream is never called", async () => {
    await start();
    const long = "word ".repeat(40);
    const error = await expectError(await embed({ model: "emb-echo", input: ["short", "fine", long] }), 400, "context_length_exceeded");
    expect(error.param).toBe("input[2]");
    expect(error.message).toContain("input[2]");
    expect(error.message).toContain("20 tokens");
    expect((await expectError(await embed({ model: "emb-echo", input: long }), 400, "context_length_exceeded")).param).toBe("input");
    const ids = Array.from({ length: 21 }, (_, i) => i);
    expect((await expectError(await embed({ model: "emb-echo", input: ids }), 400, "context_length_exceeded")).param).toBe("input");
    expect((await expectError(await embed({ model: "emb-echo", input: [[1], ids] }), 400, "context_length_exceeded")).param).toBe("input[1]");
  });

  it("accepts inputs at the limit, counting text whose bytes exceed it", async () => {
    await start();
    await embedOk({ model: "emb-echo", input: Array.from({ length: 20 }, (_, i) => i) });
    const text = "word ".repeat(15).trim(); // 74 bytes, 15 tokens
    expect(countText(text)).toBeLessThanOrEqual(20);
    expect((await embedOk({ model: "emb-echo", input: [text] })).usage.prompt_tokens).toBe(countText(text));
  });

  it("defaults maxToken to 3000 and defaultToken to 700 (FastGPT's field names)", () => {
    const c = parseConfig(config({ vectorModels: [{ model: "emb-echo" }, { model: "emb-up" }] }));
    expect(c.vectorModels[0]).toMatchObject({ model: "emb-echo", maxToken: 3000, defaultToken: 700, inputPrice: 0, charsPointsPrice: 0 });
  });
});

describe("keys and models", () => {
  it("answers 404 model_not_found for an unknown model, a chat model, and a vector model on chat", async () => {
    await start();
    await expectError(await embed({ model: "nope", input: "x" }), 404, "model_not_found");
    await expectError(await embed({ model: "m", input: "x" }), 404, "model_not_found");
    const chat = await fetch(`${gw!.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${APP_KEY}` },
      body: JSON.stringify({ model: "emb-echo", messages: [{ role: "user", content: "hi" }] }),
    });
    await expectError(chat, 404, "model_not_found");
  });

  it("lets an app's keys use only the vector models its models list; an app without models, every one", async () => {
    await start();
    await expectError(await embed({ model: "emb-echo", input: "x" }, CHAT_ONLY_KEY), 404, "model_not_found");
    await embedOk({ model: "emb-echo", input: "x" }, OPEN_KEY);
    await embedOk({ model: "emb-up", input: "x" }, OPEN_KEY);
  });

  it("refuses a global key with 403 app_key_required, and a missing or wrong key with 401", async () => {
    await start();
    const error = await expectError(await embed({ model: "emb-echo", input: "x" }, GLOBAL_KEY), 403, "app_key_required");
    expect(error.message).toContain("Embeddings");
    await expectError(await embed({ model: "emb-echo", input: "x" }, null), 401, "missing_api_key");
    await expectError(await embed({ model: "emb-echo", input: "x" }, "sk-wrong-key-0001"), 401, "invalid_api_key");
  });
});

describe("failover and upstream errors (docs/api.md#upstream-failures)", () => {
  it("moves to the second channel when the first answers 500, and bills the one that answered", async () => {
    await start();
    primary.behave({ status: 500 });
    const res = await embedOk({ model: "emb-up", input: "x" });
    expect(res.usage.prompt_tokens).toBe(42);
    expect(primary.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(1);
    const text = await metrics();
    expect(text).toContain('sluice_upstream_attempts_total{channel="primary",outcome="retried"} 1');
    expect(text).toContain('sluice_upstream_attempts_total{channel="backup",outcome="ok"} 1');
    expect(records.at(-1)).toMatchObject({ route: "embeddings", status: 200, channel: "backup", model: "emb-up" });
    const usage = await gw!.store.summarizeUsage({ appId: "a" });
    expect(usage.totals).toEqual({ requests: 1, inputTokens: 42, outputTokens: 0, points: 0.21 });
  });

  it("answers 502 upstream_error when every channel fails, with a usage row of that status", async () => {
    await start();
    primary.behave({ status: 503 });
    backup.behave({ status: 500 });
    const error = await expectError(await embed({ model: "emb-up", input: "x" }), 502, "upstream_error");
    expect(error.message).not.toContain("embedding failed");
    const usage = await gw!.store.summarizeUsage({});
    expect(usage.totals).toMatchObject({ requests: 1, inputTokens: 0, points: 0 });
  });

  it("passes 429 on with the upstream's Retry-After, and does not retry a request the upstream rejects", async () => {
    await start();
    primary.behave({ status: 429, retryAfter: "7" });
    backup.behave({ status: 429, retryAfter: "7" });
    const limited = await embed({ model: "emb-up", input: "x" });
    expect(limited.headers.get("retry-after")).toBe("7");
    await expectError(limited, 429, "upstream_rate_limited");
    primary.behave({ status: 400 });
    backup.behave({ status: 200 });
    primary.requests.length = 0;
    backup.requests.length = 0;
    const rejected = await expectError(await embed({ model: "emb-up", input: "x" }), 400, "upstream_rejected");
    expect(rejected.message).toContain("embedding failed with 400");
    expect(backup.requests).toHaveLength(0);
  });
});

describe("metering, budgets and rates", () => {
  it("writes a usage row with points from charsPointsPrice, and spends the app's and key's budgets", async () => {
    await start();
    const input = ["one two three", "four five"];
    const tokens = countText(input[0]!) + countText(input[1]!);
    await embedOk({ model: "emb-echo", input });
    const usage = await gw!.store.summarizeUsage({ appId: "a" });
    expect(usage.totals).toEqual({ requests: 1, inputTokens: tokens, outputTokens: 0, points: (2 * tokens) / 1000 });
    expect(usage.models).toEqual([{ model: "emb-echo", requests: 1, inputTokens: tokens, outputTokens: 0, points: (2 * tokens) / 1000 }]);
    expect(await gw!.store.getSpent("app:a")).toBeCloseTo((2 * tokens) / 1000, 9);
    expect(await gw!.store.getSpent("key:k-a")).toBeCloseTo((2 * tokens) / 1000, 9);
  });

  it("reserves the counted input's points at admission: 429 insufficient_quota when the budget cannot hold them", async () => {
    const apps = config().apps.map((a) => (a.id === "a" ? { ...a, maxUsagePoints: 0.01 } : a));
    await start({ apps });
    // 2 points per 1,000 tokens: 0.01 points hold 5 tokens
    await embedOk({ model: "emb-echo", input: "one two" });
    await expectError(await embed({ model: "emb-echo", input: "one two three four five six seven eight" }), 429, "insufficient_quota");
    expect(await metrics()).toContain('sluice_budget_refusals_total{scope_kind="app"} 1');
  });

  it("applies the app's qpm: 429 rate_limit_exceeded with Retry-After", async () => {
    const apps = config().apps.map((a) => (a.id === "a" ? { ...a, qpm: 2 } : a));
    await start({ apps });
    await embedOk({ model: "emb-echo", input: "x" });
    await embedOk({ model: "emb-echo", input: "y" });
    const res = await embed({ model: "emb-echo", input: "z" });
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    await expectError(res, 429, "rate_limit_exceeded");
  });
});

describe("observability", () => {
  it('counts requests under route="embeddings" with the model, app, tokens and points', async () => {
    await start();
    await embedOk({ model: "emb-echo", input: "hello world" });
    expect((await embed({ model: "emb-echo", input: "hello world" }, APP_KEY, "/api/v1/embeddings")).status).toBe(200);
    await embed({ model: "nope", input: "x" });
    const text = await metrics();
    const tokens = countText("hello world");
    expect(text).toContain('sluice_requests_total{route="embeddings",model="emb-echo",app="a",status="200"} 2');
    expect(text).toContain('sluice_requests_total{route="embeddings",model="",app="a",status="404"} 1');
    expect(text).toContain(`sluice_tokens_total{model="emb-echo",app="a",type="input"} ${2 * tokens}`);
    expect(text).toContain('gen_ai_client_token_usage_count{gen_ai_request_model="emb-echo",gen_ai_token_type="input"} 2');
    expect(text).toContain('gen_ai_client_token_usage_count{gen_ai_request_model="emb-echo",gen_ai_token_type="output"} 0');
    expect(text).toContain(`sluice_points_total{model="emb-echo",app="a"} ${(4 * tokens) / 1000}`);
  });

  it("writes one request log line per request: route, app, key name, model, channel, tokens, points; never the key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-emb-log-"));
    try {
      const destination = join(dir, "requests.log");
      await start({ server: { log: { level: "info", destination } } });
      await embedOk({ model: "emb-echo", input: "hello world" });
      await gw!.close();
      gw = undefined;
      const lines = readFileSync(destination, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
      const line = lines.find((l) => l.msg === "request");
      expect(line).toMatchObject({ route: "embeddings", status: 200, app: "a", keyName: "k-a", model: "emb-echo", channel: "echo", inputTokens: countText("hello world") });
      expect(readFileSync(destination, "utf8")).not.toContain(APP_KEY);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("config", () => {
  it("refuses unknown keys in vectorModels with the nearest name, and checks every reference", () => {
    const problems = (raw: unknown) => {
      try {
        parseConfig(raw);
        return [];
      } catch (err) {
        return (err as { problems: string[] }).problems;
      }
    };
    expect(problems(config({ vectorModels: [{ model: "emb-echo", maxTokn: 10 }, { model: "emb-up" }] }))).toEqual([
      'vectorModels[0].maxTokn: unknown key — did you mean "maxToken"?',
    ]);
    expect(problems(config({ vectorModels: [{ model: "emb-echo" }, { model: "emb-up" }, { model: "lonely" }] }))).toEqual([
      'vectorModels[2].model: no channel serves model "lonely"',
    ]);
    expect(problems(config({ vectorModels: [{ model: "emb-echo" }, { model: "emb-up" }, { model: "m" }] }))).toContain(
      "vectorModels[2].model: duplicate model (also in llmModels or vectorModels)",
    );
    expect(problems(config({ apps: [{ id: "a", model: "emb-echo" }], apiKeys: [] }))[0]).toMatch(/^apps\[0\]\.model: .*embedding model/);
    expect(problems(config({ apps: [{ id: "a", model: "m", models: ["m", "emb-nope"] }], apiKeys: [] }))).toEqual(['apps[0].models[1]: unknown model "emb-nope"']);
  });

  it("ships a demo config whose embedding model answers with no model server", async () => {
    const raw = JSON.parse(readFileSync(new URL("../config.json", import.meta.url), "utf8")) as Record<string, unknown>;
    gw = await startGateway({ ...raw, store: { driver: "memory" } });
    const demoKey = (raw.apiKeys as Array<{ kind: string; key: string }>).find((k) => k.kind === "app")!.key;
    const res = await new OpenAI({ apiKey: demoKey, baseURL: `${gw.url}/v1`, maxRetries: 0 }).embeddings.create({
      model: "demo-embedding",
      input: ["Hello!", "Bonjour !"],
    });
    expect(res.data).toHaveLength(2);
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
  });
});
