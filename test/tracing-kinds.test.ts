// Traces of every kind of request (docs/tracing.md#spans), over real sockets: Anthropic Messages,
// Responses, embeddings, FastGPT's chat with a chatId, a share-link chat and its callbacks — each a
// server span of its route, an attempt span with the GenAI attributes (the answer's id and model as
// the upstream reported them), and an upstream post whose traceparent names the attempt span. Then
// the wait for a busy channel as a queue span, and the request log line naming the server span.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentObserver } from "../src/observability/observer.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startJsonServer, type JsonServer } from "./support/json-server.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./support/otlp-receiver.js";
import { startScriptedUpstream, textChunks, type ScriptedUpstream } from "./support/scripted-upstream.js";

process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
const KEY = "sk-tracing-kinds-key-0001";
/** an admin key (FastGPT's AI Proxy token), which may pin a channel */
const ADMIN_KEY = "sk-tracing-kinds-admin-0001";
const CHANNEL_KEY = "chan-secret-tracing-kinds-42";
const SHARE_TOKEN = "share-token-tracing-kinds-9d1e";
const PARENT = "00f067aa0ba902b7";
const PROMPT = "the private question zebra-4411";
/** the name the model server gives itself in its answers, not the configured one */
const SERVED = "m-served-2026";

let model: ScriptedUpstream;
let vectors: JsonServer;
const vectorHeaders: IncomingHttpHeaders[] = [];
let op: OperatorServer;
let otlp: OtlpReceiver;
let gw: StartedGateway;
/** what the next request for model "mq" waits on after its first chunk */
let holdNext: Promise<void> | undefined;
/** told of each change of a channel's queue */
let onQueue: ((channel: string, depth: number) => void) | undefined;

const CHANNEL = { key: CHANNEL_KEY, healthCheck: { intervalMs: 0 } };
/** models m and mq (channel q: one call at a time) on the scripted server, e on the vectors' */
function gatewayConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    channels: [
      { name: "main", baseUrl: model.url, models: ["m"], ...CHANNEL },
      { name: "q", baseUrl: model.url, models: ["mq"], concurrency: 1, ...CHANNEL },
      { name: "vec", baseUrl: vectors.url, models: ["e"], ...CHANNEL },
      { name: "p1", id: 21, baseUrl: model.url, models: ["m2"], ...CHANNEL },
      { name: "p2", id: 22, baseUrl: model.url, models: ["m2"], ...CHANNEL },
    ],
    llmModels: [
      { model: "m", maxContext: 4000, maxResponse: 500 },
      { model: "mq", maxContext: 4000, maxResponse: 500 },
      { model: "m2", maxContext: 8000, maxResponse: 500 },
    ],
    vectorModels: [{ model: "e" }],
    apps: [{ id: "a", model: "m", models: ["m", "mq", "m2", "e"] }],
    apiKeys: [
      { name: "k", kind: "app", appId: "a", key: KEY },
      { name: "fastgpt", kind: "admin", appId: "a", key: ADMIN_KEY },
    ],
    shareLinks: [{ shareId: "guarded", appId: "a", authHost: op.url }],
    tracing: { endpoint: otlp.url },
    ...extra,
  };
}

beforeAll(async () => {
  [model, vectors, op, otlp] = await Promise.all([
    startScriptedUpstream((req) => {
      const holdAfterFirst = req.body.model === "mq" ? holdNext : undefined;
      if (holdAfterFirst) holdNext = undefined;
      return { chunks: textChunks("Hello from the model."), finishReason: "stop", usage: { prompt_tokens: 11, completion_tokens: 7 }, model: SERVED, holdAfterFirst };
    }),
    startJsonServer("/v1/embeddings", (_body, res, req) => {
      vectorHeaders.push(req.headers);
      const data = [{ object: "embedding", index: 0, embedding: [0.5, -0.25] }];
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data, model: "e-served", usage: { prompt_tokens: 42, total_tokens: 42 } }));
    }),
    startOperatorServer(),
    startOtlpReceiver(),
  ]);
  gw = await startGateway(gatewayConfig(), { env: {}, observerExtra: { ...silentObserver, channelQueue: (channel, depth) => onQueue?.(channel, depth) } });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([model, vectors, op, otlp].map((s) => s?.close()));
  expect(op.violations).toEqual([]);
});

const newTrace = () => randomBytes(16).toString("hex");
const parentOf = (traceparent: string | string[] | undefined) => String(traceparent).split("-")[2];

function post(path: string, trace: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }, url = gw.url) {
  return fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json", traceparent: `00-${trace}-${PARENT}-01`, ...headers },
    body: JSON.stringify(body),
  });
}

/** The trace's spans named `names`, once all have been exported. */
async function spans(trace: string, ...names: string[]): Promise<ReceivedSpan[]> {
  const of = (all: ReceivedSpan[], name: string) => all.find((s) => s.traceId === trace && s.name === name);
  await otlp.waitFor((all) => names.every((name) => of(all, name)));
  return names.map((name) => of(otlp.spans, name)!);
}

/** The server span continues the client's trace; the attempt span is a client span under it. */
async function serverAndAttempt(trace: string, route: string, attemptName: string, decision = "only"): Promise<[ReceivedSpan, ReceivedSpan]> {
  const [server, attempt] = await spans(trace, `POST ${route}`, attemptName);
  expect(server!.parentSpanId).toBe(PARENT);
  expect(server!.kind).toBe(2);
  expect(server!.attributes).toMatchObject({ "http.request.method": "POST", "http.route": route, "http.response.status_code": 200 });
  expect(attempt!.parentSpanId).toBe(server!.spanId);
  expect(attempt!.kind).toBe(3);
  expect(attempt!.attributes).toMatchObject({ "server.address": "127.0.0.1", "sluice.attempt": 1, "sluice.route.decision": decision });
  return [server!, attempt!];
}

/** What the model server was sent in `trace`: its traceparent names the attempt span. */
function expectUpstreamParent(trace: string, attempt: ReceivedSpan, headers: Array<Record<string, unknown>>): void {
  const sent = headers.filter((h) => String(h.traceparent).includes(trace));
  expect(sent).toHaveLength(1);
  expect(parentOf(sent[0]!.traceparent as string)).toBe(attempt.spanId);
}
const modelHeaders = () => model.requests.map((r) => r.headers);

/** No prompt, key, token or uid in anything exported so far. */
function expectNoSecrets(): void {
  for (const body of otlp.bodies) for (const secret of [PROMPT, "zebra-4411", KEY, ADMIN_KEY, CHANNEL_KEY, SHARE_TOKEN]) expect(body).not.toContain(secret);
}

describe("traces of each kind", () => {
  it("Anthropic Messages (streamed): POST /v1/messages, `chat m` with the answer's id and the model the server reported", async () => {
    const trace = newTrace();
    const res = await post("/v1/messages", trace, { model: "m", max_tokens: 50, temperature: 0.3, stream: true, messages: [{ role: "user", content: PROMPT }] }, { "x-api-key": KEY });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("message_stop");
    const [server, attempt] = await serverAndAttempt(trace, "/v1/messages", "chat m");
    expect(server.attributes).toMatchObject({ "sluice.app.id": "a", "sluice.key.name": "k" });
    expect(attempt.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "m",
      "gen_ai.request.max_tokens": 50,
      "gen_ai.request.temperature": 0.3,
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 7,
      "gen_ai.response.finish_reasons": ["stop"],
      "gen_ai.response.id": "chatcmpl-scripted",
      "gen_ai.response.model": SERVED,
      "sluice.channel": "main",
    });
    expect(attempt.events.map((e) => e.name)).toContain("gen_ai.first_token");
    expectUpstreamParent(trace, attempt, modelHeaders());
    expectNoSecrets();
  });

  it("Responses (whole answer): POST /v1/responses, `chat m` with max_output_tokens, the answer's id and model", async () => {
    const trace = newTrace();
    const res = await post("/v1/responses", trace, { model: "m", max_output_tokens: 40, input: PROMPT });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("completed");
    const [, attempt] = await serverAndAttempt(trace, "/v1/responses", "chat m");
    expect(attempt.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.max_tokens": 40,
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 7,
      "gen_ai.response.id": "chatcmpl-scripted",
      "gen_ai.response.model": SERVED,
    });
    expect(attempt.events.map((e) => e.name)).not.toContain("gen_ai.first_token");
    expectUpstreamParent(trace, attempt, modelHeaders());
    expectNoSecrets();
  });

  it("embeddings: POST /v1/embeddings, `embeddings e` with its input tokens and the model the server reported", async () => {
    const trace = newTrace();
    const res = await post("/v1/embeddings", trace, { model: "e", input: PROMPT });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1);
    const [, attempt] = await serverAndAttempt(trace, "/v1/embeddings", "embeddings e");
    expect(attempt.attributes).toMatchObject({ "gen_ai.operation.name": "embeddings", "gen_ai.request.model": "e", "gen_ai.usage.input_tokens": 42, "gen_ai.response.model": "e-served", "sluice.channel": "vec" });
    expect(attempt.attributes["gen_ai.usage.output_tokens"]).toBeUndefined();
    expectUpstreamParent(trace, attempt, vectorHeaders as Array<Record<string, unknown>>);
    expectNoSecrets();
  });

  it("FastGPT's chat with a chatId: POST /api/v1/chat/completions; the answer's id is the chat's, the span's the upstream's", async () => {
    const trace = newTrace();
    const res = await post("/api/v1/chat/completions", trace, { model: "m", chatId: "chat-traced-1", messages: [{ role: "user", content: PROMPT }] });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: string }).id).toBe("chat-traced-1");
    const [, attempt] = await serverAndAttempt(trace, "/api/v1/chat/completions", "chat m");
    expect(attempt.attributes).toMatchObject({ "gen_ai.usage.output_tokens": 7, "gen_ai.response.id": "chatcmpl-scripted", "gen_ai.response.model": SERVED, "gen_ai.response.finish_reasons": ["stop"] });
    expectUpstreamParent(trace, attempt, modelHeaders());
    expectNoSecrets();
  });
});

describe("route decisions", () => {
  it("sluice.route.decision: least_loaded, then prefix for another task with the same system prompt, pinned for the same task again, only for a call pinned to a channel", async () => {
    const system = { role: "system", content: "A long shared system prompt, many kilobytes of it. ".repeat(80) };
    const task = (question: string) => [system, { role: "user", content: `${PROMPT} ${question}` }];
    const user = { authorization: `Bearer ${KEY}` };
    const asks: Array<[Record<string, string>, unknown[], string]> = [
      [user, task("first task"), "least_loaded"],
      [user, task("second task"), "prefix"],
      [user, task("first task"), "pinned"],
      [{ authorization: `Bearer ${ADMIN_KEY}`, "aiproxy-channel": "22" }, task("a probe"), "only"],
    ];
    const attempts: ReceivedSpan[] = [];
    for (const [headers, messages, decision] of asks) {
      const trace = newTrace();
      const res = await post("/v1/chat/completions", trace, { model: "m2", messages }, headers);
      expect(res.status).toBe(200);
      await res.text();
      attempts.push((await serverAndAttempt(trace, "/v1/chat/completions", "chat m2", decision))[1]);
    }
    expect(attempts.slice(1, 3).map((a) => a.attributes["sluice.channel"])).toEqual(Array(2).fill(attempts[0]!.attributes["sluice.channel"]));
    expect(attempts[3]!.attributes["sluice.channel"]).toBe("p2");
    expectNoSecrets();
  });
});

describe("traces of share links", () => {
  it("a share-link chat: the server span names the link; start and finish callbacks are its child spans, their traceparent theirs", async () => {
    const trace = newTrace();
    const finished = op.waitForFinish(op.callsTo("/shareAuth/finish").length + 1);
    const body = { shareId: "guarded", outLinkUid: SHARE_TOKEN, chatId: "s-traced", stream: true, messages: [{ role: "user", content: PROMPT }] };
    const res = await post("/api/v1/chat/completions", trace, body, {});
    expect(res.status).toBe(200);
    await res.text();
    await finished;
    const [server, attempt] = await serverAndAttempt(trace, "/api/v1/chat/completions", "chat m");
    expect(server.attributes).toMatchObject({ "sluice.share.id": "guarded", "sluice.app.id": "a" });
    expect(attempt.attributes).toMatchObject({ "gen_ai.response.id": "chatcmpl-scripted", "gen_ai.response.model": SERVED });
    expect(server.attributes["sluice.key.name"]).toBeUndefined();
    expectUpstreamParent(trace, attempt, modelHeaders());
    const callbacks = await spans(trace, "POST /shareAuth/start", "POST /shareAuth/finish");
    for (const [span, path] of [[callbacks[0]!, "/shareAuth/start"], [callbacks[1]!, "/shareAuth/finish"]] as const) {
      expect(span.parentSpanId).toBe(server.spanId);
      expect(span.kind).toBe(3);
      expect(span.attributes).toMatchObject({ "http.request.method": "POST", "url.path": path, "http.response.status_code": 200 });
      const sent = op.callsTo(path).filter((c) => String(c.headers.traceparent).includes(trace));
      expect(sent).toHaveLength(1);
      expect(parentOf(sent[0]!.headers.traceparent)).toBe(span.spanId);
    }
    expectNoSecrets();
    for (const text of otlp.bodies) expect(text).not.toContain(`u-${SHARE_TOKEN}`);
  });

  it("the share API (POST /api/share/init): its server span names the link, the init callback is its child", async () => {
    const trace = newTrace();
    const res = await post("/api/share/init", trace, { shareId: "guarded", outLinkUid: `${SHARE_TOKEN}-2` }, {});
    expect(res.status).toBe(200);
    const [server, init] = await spans(trace, "POST /api/share/init", "POST /shareAuth/init");
    expect(server!.attributes).toMatchObject({ "http.route": "/api/share/init", "http.response.status_code": 200, "sluice.share.id": "guarded" });
    expect(init!.parentSpanId).toBe(server!.spanId);
    expectNoSecrets();
  });
});

describe("the queue and the log", () => {
  const ask = (trace: string) => post("/v1/chat/completions", trace, { model: "mq", stream: true, messages: [{ role: "user", content: PROMPT }] });

  it("a call that waits for a busy channel: one `queue q` span under its attempt span; the call that did not wait has none", async () => {
    const [busy, waiting] = [newTrace(), newTrace()];
    let release!: () => void;
    holdNext = new Promise<void>((resolve) => (release = resolve));
    const first = await ask(busy); // its answer has begun: it holds the channel's one slot
    expect(first.status).toBe(200);
    const queued = new Promise<void>((resolve) => (onQueue = (channel, depth) => channel === "q" && depth === 1 && resolve()));
    const second = ask(waiting);
    await queued;
    release();
    await first.text();
    expect((await second).status).toBe(200);
    const [queue, attempt, server] = await spans(waiting, "queue q", "chat mq", "POST /v1/chat/completions");
    expect(queue!.parentSpanId).toBe(attempt!.spanId);
    expect(attempt!.parentSpanId).toBe(server!.spanId);
    expect(queue!.kind).toBe(1);
    expect(queue!.attributes).toMatchObject({ "sluice.channel": "q", "sluice.priority": 0 });
    expect(queue!.startMs).toBeGreaterThanOrEqual(attempt!.startMs);
    expect(queue!.endMs).toBeGreaterThanOrEqual(queue!.startMs);
    expect(otlp.spans.filter((s) => s.name.startsWith("queue"))).toHaveLength(1);
    await spans(busy, "chat mq");
    expect(otlp.spans.filter((s) => s.traceId === busy && s.name.startsWith("queue"))).toEqual([]);
  });

  it("the request log line carries the server span's traceId and spanId", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-trace-log-"));
    try {
      const file = join(dir, "requests.log");
      const logged = await startGateway(gatewayConfig({ server: { log: { level: "info", destination: file } } }), { env: {} });
      const trace = newTrace();
      const res = await post("/v1/chat/completions", trace, { model: "m", messages: [{ role: "user", content: PROMPT }] }, { authorization: `Bearer ${KEY}`, "x-request-id": "trace-log-line-1" }, logged.url);
      expect(res.status).toBe(200);
      await res.text();
      await logged.close(); // flushes the log and the spans
      const [server] = await spans(trace, "POST /v1/chat/completions");
      const text = readFileSync(file, "utf8");
      const lines = text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      const line = lines.find((l) => l.requestId === "trace-log-line-1");
      expect(line).toMatchObject({ msg: "request", status: 200, traceId: trace, spanId: server!.spanId });
      expect(server!.traceId).toBe(trace);
      for (const secret of [KEY, CHANNEL_KEY, PROMPT]) expect(text).not.toContain(secret);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
