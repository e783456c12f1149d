// Traces (docs/tracing.md): a client's traceparent continued through Sluice into the model server,
// exported to a real OTLP/HTTP receiver; failover's attempts; sampling; tracing off; a broken
// collector that changes no answer; no secret in any exported span.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startOtlpReceiver, type OtlpReceiver } from "./support/otlp-receiver.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
const KEY = "sk-tracing-test-key-0001";
const CHANNEL_KEY = "chan-secret-tracing-77";
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const PROMPT = "tell me the secret prompt text qwerty";

let up: Upstream;
let down: Upstream;
let otlp: OtlpReceiver;
const gateways: StartedGateway[] = [];

beforeAll(async () => {
  [up, down, otlp] = await Promise.all([startUpstream(), startUpstream({ status: 503 }), startOtlpReceiver()]);
});
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
  otlp.spans.length = 0;
  otlp.bodies.length = 0;
  otlp.mode = "ok";
  up.reset();
});
afterAll(async () => {
  await Promise.all([up, down, otlp].map((s) => s?.close()));
});

async function gateway(tracing: Record<string, unknown> | undefined, channels: Array<{ name: string; baseUrl: string; priority?: number }> = [{ name: "main", baseUrl: "" }]) {
  const gw = await startGateway(
    {
      channels: channels.map((c) => ({ name: c.name, baseUrl: c.baseUrl || up.url, priority: c.priority ?? 0, key: CHANNEL_KEY, models: ["m"], healthCheck: { intervalMs: 0 } })),
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500, charsPointsPrice: 1 }],
      routing: { maxAttempts: 2 },
      apps: [{ id: "a", model: "m", maxUsagePoints: 1_000_000 }],
      apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
      ...(tracing && { tracing }),
    },
    { env: {} },
  );
  gateways.push(gw);
  return gw;
}

const chat = (gw: StartedGateway, headers: Record<string, string> = {}, stream = true) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, ...headers },
    body: JSON.stringify({ model: "m", stream, max_tokens: 50, temperature: 0.5, messages: [{ role: "user", content: PROMPT }] }),
  });

/** closed now (its spans flushed), not again after the test */
const closed = (gw: StartedGateway) => (gateways.splice(gateways.indexOf(gw), 1), gw.close());
const parentOf = (traceparent: string | undefined) => traceparent?.split("-")[2];

describe("tracing", () => {
  it("continues a client's traceparent: server, attempt spans with the GenAI attributes; the upstream's parent is the attempt span", async () => {
    const gw = await gateway({ endpoint: otlp.url });
    const res = await chat(gw, { traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: "vendor=1" });
    expect(res.status).toBe(200);
    await res.text();
    await otlp.waitFor((s) => s.some((x) => x.name === "POST /v1/chat/completions") && s.some((x) => x.name === "chat m"));
    const server = otlp.spans.find((s) => s.name === "POST /v1/chat/completions")!;
    const attempt = otlp.spans.find((s) => s.name === "chat m")!;
    expect(server.traceId).toBe(TRACE);
    expect(server.parentSpanId).toBe(PARENT);
    expect(server.kind).toBe(2);
    expect(server.attributes).toMatchObject({ "http.request.method": "POST", "http.route": "/v1/chat/completions", "http.response.status_code": 200, "sluice.app.id": "a", "sluice.key.name": "k" });
    expect(attempt.parentSpanId).toBe(server.spanId);
    expect(attempt.kind).toBe(3);
    expect(attempt.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "m",
      "gen_ai.request.max_tokens": 50,
      "gen_ai.request.temperature": 0.5,
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 13,
      "gen_ai.response.finish_reasons": ["stop"],
      "server.address": "127.0.0.1",
      "sluice.channel": "main",
      "sluice.attempt": 1,
      "sluice.route.decision": "only",
    });
    expect(attempt.events.map((e) => e.name)).toContain("gen_ai.first_token");
    expect(server.resource).toMatchObject({ "service.name": "sluice" });
    const sent = up.last().headers;
    expect(sent.traceparent?.split("-")[1]).toBe(TRACE);
    expect(parentOf(sent.traceparent)).toBe(attempt.spanId);
    expect(sent.tracestate).toBe("vendor=1");
    // the sweep: no prompt, key, channel key in anything exported
    for (const body of otlp.bodies) for (const secret of [PROMPT, KEY, CHANNEL_KEY, "qwerty"]) expect(body).not.toContain(secret);
  });

  it("failover: two attempt spans, the second marked failover, the first with its error type", async () => {
    const gw = await gateway({ endpoint: otlp.url }, [
      { name: "bad", baseUrl: down.url, priority: 10 },
      { name: "good", baseUrl: up.url },
    ]);
    const res = await chat(gw, {}, false);
    expect(res.status).toBe(200);
    await otlp.waitFor((s) => s.filter((x) => x.name === "chat m").length === 2 && s.some((x) => x.name.startsWith("POST")));
    const attempts = otlp.spans.filter((s) => s.name === "chat m").sort((a, b) => Number(a.attributes["sluice.attempt"]) - Number(b.attributes["sluice.attempt"]));
    expect(attempts[0]!.attributes).toMatchObject({ "sluice.channel": "bad", "sluice.attempt": 1, "error.type": "http_error" });
    expect(attempts[1]!.attributes).toMatchObject({ "sluice.channel": "good", "sluice.attempt": 2, "sluice.route.decision": "failover" });
    expect(new Set(attempts.map((a) => a.traceId)).size).toBe(1);
  });

  it("sampleRatio 0: nothing exported, the upstream still gets the trace's traceparent (not sampled)", async () => {
    const gw = await gateway({ endpoint: otlp.url, sampleRatio: 0 });
    await (await chat(gw, { traceparent: `00-${TRACE}-${PARENT}-00` })).text();
    const sent = up.last().headers.traceparent!;
    expect(sent.split("-")[1]).toBe(TRACE);
    expect(sent.endsWith("-00")).toBe(true);
    await closed(gw);
    expect(otlp.spans).toHaveLength(0);
  });

  it("tracing off: no connection to a collector, the client's traceparent forwarded as received", async () => {
    const gw = await gateway(undefined);
    const posts = otlp.posts;
    await (await chat(gw, { traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: "v=2" })).text();
    expect(up.last().headers.traceparent).toBe(`00-${TRACE}-${PARENT}-01`);
    expect(up.last().headers.tracestate).toBe("v=2");
    await closed(gw);
    expect(otlp.posts).toBe(posts);
  });

  it("trustIncoming false: a new trace, the incoming one kept as a link", async () => {
    const gw = await gateway({ endpoint: otlp.url, trustIncoming: false });
    await (await chat(gw, { traceparent: `00-${TRACE}-${PARENT}-01` })).text();
    await otlp.waitFor((s) => s.some((x) => x.name.startsWith("POST")));
    const server = otlp.spans.find((s) => s.name.startsWith("POST"))!;
    expect(server.traceId).not.toBe(TRACE);
    expect(server.links).toEqual([{ traceId: TRACE, spanId: PARENT }]);
  });

  for (const mode of ["fail", "hang"] as const) {
    it(`a collector that ${mode === "fail" ? "answers 500" : "never answers"} changes no answer; its spans are counted dropped`, async () => {
      otlp.mode = mode;
      const gw = await gateway({ endpoint: otlp.url, exportTimeoutMs: 300 });
      for (let i = 0; i < 3; i++) {
        const res = await chat(gw, {}, false);
        expect(res.status).toBe(200);
        expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(1);
      }
      const deadline = Date.now() + 5000;
      let dropped = 0;
      while (dropped < 1 && Date.now() < deadline) {
        const text = await (await fetch(`${gw.url}/metrics`)).text();
        dropped = Number(/^sluice_trace_spans_dropped_total (\S+)/m.exec(text)?.[1] ?? 0);
        if (dropped < 1) await new Promise((r) => setTimeout(r, 50));
      }
      expect(dropped).toBeGreaterThanOrEqual(1);
    });
  }
});
