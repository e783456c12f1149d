// Exemplars (docs/tracing.md#exemplars): a sampled request's trace id on its latency buckets when
// /metrics is scraped as OpenMetrics, read back by a real Prometheus with exemplar storage; none for
// an unsampled trace; the Prometheus text unchanged by an OpenMetrics scrape before it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startOtlpReceiver, type OtlpReceiver } from "./support/otlp-receiver.js";
import { pollUntil, startPrometheus } from "./support/prometheus.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
const KEY = "sk-exemplars-test-key-01";
const TRACE = "0af7651916cd43dd8448eb211c80319c";
const OPEN_METRICS = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";

let up: Upstream;
let otlp: OtlpReceiver;
const gateways: StartedGateway[] = [];

beforeAll(async () => {
  [up, otlp] = await Promise.all([startUpstream({ chunks: 3 }), startOtlpReceiver()]);
});
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});
afterAll(async () => {
  await Promise.all([up, otlp].map((s) => s?.close()));
});

async function gateway(sampleRatio = 1) {
  const gw = await startGateway(
    {
      channels: [{ name: "main", baseUrl: up.url, key: "chan-key-exemplars", models: ["m"], healthCheck: { intervalMs: 0 } }],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500 }],
      apps: [{ id: "a", model: "m" }],
      apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
      tracing: { endpoint: otlp.url, sampleRatio },
    },
    { env: {} },
  );
  gateways.push(gw);
  return gw;
}

async function streamedChat(gw: StartedGateway, traceparent: string) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, traceparent },
    body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

const scrape = async (gw: StartedGateway, accept?: string) => {
  const res = await fetch(`${gw.url}/metrics`, { headers: accept ? { accept } : {} });
  return { type: res.headers.get("content-type"), text: await res.text() };
};
const exemplarLines = (text: string) => text.split("\n").filter((l) => l.includes(" # {"));

describe("exemplars", () => {
  it("an OpenMetrics scrape puts a sampled request's trace id on its duration and TTFT buckets", async () => {
    const gw = await gateway();
    await streamedChat(gw, `00-${TRACE}-b7ad6b7169203331-01`);
    const open = await scrape(gw, OPEN_METRICS);
    expect(open.type).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    expect(open.text.endsWith("# EOF\n")).toBe(true);
    expect(open.text).toMatch(/^# TYPE sluice_requests counter$/m);
    expect(open.text).toMatch(/^sluice_requests_total\{/m);
    const lines = exemplarLines(open.text);
    for (const family of ["sluice_request_duration_seconds_bucket", "gen_ai_server_time_to_first_token_seconds_bucket"]) {
      const line = lines.find((l) => l.startsWith(`${family}{`));
      expect(line, family).toMatch(new RegExp(` # \\{trace_id="${TRACE}"\\} [0-9.e-]+ \\d+(\\.\\d+)?$`));
    }
    // the Prometheus text after it: no exemplar, counter names as they were
    const plain = await scrape(gw);
    expect(plain.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(exemplarLines(plain.text)).toEqual([]);
    expect(plain.text).toMatch(/^# TYPE sluice_requests_total counter$/m);
    expect(plain.text).not.toContain("# EOF");
  });

  it("an unsampled trace leaves no exemplar", async () => {
    const gw = await gateway(0);
    await streamedChat(gw, `00-${TRACE}-b7ad6b7169203331-00`);
    const { text } = await scrape(gw, OPEN_METRICS);
    expect(text).toMatch(/^gen_ai_server_time_to_first_token_seconds_count\{model="m"\} 1$/m);
    expect(exemplarLines(text)).toEqual([]);
  });

  it("a real Prometheus with exemplar storage reads the trace id back (what Grafana links to)", async () => {
    const gw = await gateway();
    const dir = await mkdtemp(join(tmpdir(), "sluice-exemplars-"));
    const prometheus = await startPrometheus({ target: new URL(gw.url).host, job: "sluice", dir, features: ["exemplar-storage"] });
    try {
      await streamedChat(gw, `00-${TRACE}-b7ad6b7169203331-01`);
      const found = async () => {
        const end = Date.now() / 1000 + 60;
        const url = `${prometheus.url}/api/v1/query_exemplars?query=${encodeURIComponent("gen_ai_server_time_to_first_token_seconds_bucket")}&start=${end - 600}&end=${end}`;
        const body = (await (await fetch(url)).json()) as { data?: Array<{ exemplars: Array<{ labels: { trace_id?: string } }> }> };
        return (body.data ?? []).some((s) => s.exemplars.some((e) => e.labels.trace_id === TRACE));
      };
      await pollUntil("Prometheus to store the exemplar", 20_000, found, { log: prometheus.log });
    } finally {
      await prometheus.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 40_000); // past the poll's own 20 s, so a failure stops Prometheus rather than leaving it
});
