// Metrics registry, request log, health and the /metrics route, driven directly (no gateway).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMetrics } from "../src/metrics/prometheus.js";
import { metricsResponse } from "../src/metrics/route.js";
import { createHealth } from "../src/observability/health.js";
import type { RequestRecord } from "../src/observability/observer.js";
import { createLogger, type LogOptions } from "../src/observability/logger.js";
import { createRequestLog } from "../src/observability/request-log.js";

const CONTRACT_FAMILIES = [
  "sluice_requests_total",
  "sluice_request_duration_seconds",
  "gen_ai_server_time_to_first_token_seconds",
  "gen_ai_client_token_usage",
  "sluice_tokens_total",
  "sluice_points_total",
  "sluice_upstream_requests_total",
  "sluice_inflight_requests",
  "sluice_share_callbacks_total",
  "sluice_channel_up",
  "process_cpu_seconds_total",
  "process_resident_memory_bytes",
  "nodejs_eventloop_lag_seconds",
];

/** prom-client's own default gauges named `*_total`: promtool's lint flags them, nothing we name. */
const PROM_CLIENT_LINT = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

const options = { models: ["glm"], apps: ["support"], channels: ["local"] };

function record(over: Partial<RequestRecord> = {}): RequestRecord {
  return {
    requestId: "req-1",
    route: "/v1/chat/completions",
    method: "POST",
    status: 200,
    appId: "support",
    keyName: "support-web",
    model: "glm",
    channel: "local",
    stream: true,
    inputTokens: 12,
    outputTokens: 30,
    points: 0.5,
    durationMs: 420,
    ttftMs: 35,
    ...over,
  };
}

/** Feeds one of every kind of report, as a gateway would. */
function feed(metrics: ReturnType<typeof createMetrics>) {
  metrics.requestStarted("/v1/chat/completions");
  metrics.upstreamFinished("local", "glm", "ok");
  metrics.requestFinished(record());
  metrics.requestStarted("/v1/chat/completions");
  metrics.upstreamFinished("local", "glm", "http_error");
  metrics.requestFinished(record({ status: 502, stream: false, ttftMs: undefined, errorCode: "upstream_error" }));
  metrics.requestStarted("/v1/models");
  metrics.requestFinished(record({ route: "/v1/models", status: 401, model: undefined, appId: undefined }));
  metrics.channelState("local", false);
  metrics.shareCallback("finish", "retry");
}

describe("prometheus metrics", () => {
  it("renders every family docs/operations.md#metrics lists", async () => {
    const metrics = createMetrics(options);
    feed(metrics);
    const body = await metrics.render();
    for (const name of CONTRACT_FAMILIES) expect(body, name).toMatch(new RegExp(`^# TYPE ${name} `, "m"));
    expect(metrics.contentType).toMatch(/^text\/plain/);
  });

  it("counts a request under its route, model, app and status", async () => {
    const metrics = createMetrics(options);
    feed(metrics);
    const body = await metrics.render();
    expect(body).toContain('sluice_requests_total{route="/v1/chat/completions",model="glm",app="support",status="200"} 1');
    expect(body).toContain('sluice_requests_total{route="/v1/models",model="",app="",status="401"} 1');
    expect(body).toContain('sluice_tokens_total{model="glm",app="support",type="output"} 60');
    expect(body).toContain('sluice_upstream_requests_total{channel="local",model="glm",outcome="http_error"} 1');
    expect(body).toContain('sluice_channel_up{channel="local"} 0');
    expect(body).toContain("sluice_inflight_requests 0");
    expect(body).toContain('gen_ai_server_time_to_first_token_seconds_count{model="glm"} 1');
  });

  it("pre-initialises the series the dashboard reads", async () => {
    const body = await createMetrics(options).render();
    // a channel not contacted yet is not known to be up
    expect(body).toContain('sluice_channel_up{channel="local"} 0');
    expect(body).toContain('sluice_upstream_attempts_total{channel="local",outcome="circuit_open"} 0');
    expect(body).toContain('sluice_budget_refusals_total{scope_kind="share"} 0');
    expect(body).toContain('sluice_upstream_requests_total{channel="local",model="glm",outcome="ok"} 0');
    expect(body).toContain('sluice_share_callbacks_total{kind="finish",outcome="dropped"} 0');
    expect(body).toContain('gen_ai_client_token_usage_count{gen_ai_request_model="glm",gen_ai_token_type="input"} 0');
  });

  it("bounds label values to the configured names", async () => {
    const metrics = createMetrics(options);
    metrics.requestFinished(record({ model: "made-up-model", appId: "made-up-app" }));
    metrics.upstreamFinished("made-up-channel", "made-up-model", "timeout");
    for (let i = 0; i < 40; i++) metrics.requestFinished(record({ route: `/route/${i}` }));
    const body = await metrics.render();
    expect(body).not.toContain("made-up");
    expect(body).toContain('sluice_requests_total{route="/v1/chat/completions",model="other",app="other",status="200"} 1');
    expect(body).toContain('sluice_upstream_requests_total{channel="other",model="other",outcome="timeout"} 1');
    const routes = new Set([...body.matchAll(/sluice_requests_total\{route="([^"]*)"/g)].map((m) => m[1]));
    expect(routes.size).toBeLessThanOrEqual(33);
    expect(routes.has("other")).toBe(true);
  });

  it("keeps separate registries for separate gateways", async () => {
    const a = createMetrics(options);
    const b = createMetrics(options);
    a.requestFinished(record());
    expect(await b.render()).not.toContain('status="200"');
  });

  it("passes promtool check metrics", async () => {
    expect(existsSync("/usr/bin/promtool"), "promtool missing: .ci/run installs the Debian prometheus package").toBe(true);
    const metrics = createMetrics(options);
    feed(metrics);
    const result = spawnSync("/usr/bin/promtool", ["check", "metrics"], { input: await metrics.render(), encoding: "utf8" });
    const problems = (result.stdout + result.stderr)
      .split("\n")
      .filter((line) => line && !PROM_CLIENT_LINT.some((name) => line.startsWith(`${name} `)));
    expect(problems).toEqual([]);
    // 3 = lint findings only (the prom-client ones above); 1 would be a format error
    expect([0, 3]).toContain(result.status);
  });
});

/** The request log on a logger of its own; `close()` writes out what the logger buffered. */
function createRequestLogOn(opts: LogOptions) {
  const logger = createLogger(opts);
  return { ...createRequestLog(logger), close: () => logger.close() };
}

describe("request log", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "sluice-log-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const lines = async (path: string) =>
    (await readFile(path, "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it("writes one JSON line per finished request, creating the directory", async () => {
    const path = join(dir, "nested", "requests.log");
    const log = createRequestLogOn({ level: "info", destination: path });
    log.requestStarted("/v1/chat/completions");
    log.requestFinished(record());
    log.requestFinished(record({ requestId: "req-2", status: 404, errorCode: "model_not_found" }));
    log.requestFinished(record({ requestId: "req-3", status: 502, errorCode: "upstream_error" }));
    await log.close();

    const out = await lines(path);
    expect(out.map((l) => [l.requestId, l.level])).toEqual([
      ["req-1", "info"],
      ["req-2", "warn"],
      ["req-3", "error"],
    ]);
    expect(out[0]).toMatchObject({
      msg: "request",
      route: "/v1/chat/completions",
      method: "POST",
      status: 200,
      app: "support",
      keyName: "support-web",
      model: "glm",
      channel: "local",
      stream: true,
      inputTokens: 12,
      outputTokens: 30,
      points: 0.5,
      durationMs: 420,
      ttftMs: 35,
    });
    expect(new Date(String(out[0]!.time)).toISOString()).toBe(out[0]!.time);
    expect(out[1]).toMatchObject({ errorCode: "model_not_found" });
  });

  it("appends to an existing file", async () => {
    const path = join(dir, "requests.log");
    for (const requestId of ["a", "b"]) {
      const log = createRequestLogOn({ level: "info", destination: path });
      log.requestFinished(record({ requestId }));
      await log.close();
    }
    expect((await lines(path)).map((l) => l.requestId)).toEqual(["a", "b"]);
  });

  it("drops lines below the configured level", async () => {
    const path = join(dir, "requests.log");
    const log = createRequestLogOn({ level: "warn", destination: path });
    log.requestFinished(record({ requestId: "ok" }));
    log.requestFinished(record({ requestId: "bad", status: 400 }));
    log.upstreamFinished("local", "glm", "ok");
    await log.close();
    expect((await lines(path)).map((l) => l.requestId)).toEqual(["bad"]);
  });

  it("writes nothing at level silent", async () => {
    const path = join(dir, "requests.log");
    const log = createRequestLogOn({ level: "silent", destination: path });
    log.requestFinished(record({ status: 500 }));
    log.channelState("local", false);
    await log.close();
    expect(existsSync(path)).toBe(false);
  });
});

describe("health", () => {
  it("is live without asking the store", async () => {
    const res = createHealth({ ping: () => Promise.reject(new Error("down")) }).live();
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("is ready when the store answers", async () => {
    const res = await createHealth({ ping: async () => {} }).ready();
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ready" });
  });

  it("is unavailable when the store fails or hangs past a second", async () => {
    const failing = await createHealth({ ping: () => Promise.reject(new Error("down")) }).ready();
    expect(failing.status).toBe(503);
    expect(await failing.json()).toEqual({ status: "unavailable", reason: "store unreachable" });

    const started = Date.now();
    const hanging = await createHealth({ ping: () => new Promise(() => {}) }).ready();
    expect(hanging.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe("metrics route", () => {
  const metrics = createMetrics(options);

  it("serves the Prometheus text when no token is configured", async () => {
    const res = await metricsResponse(metrics, undefined, null);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(metrics.contentType);
    expect(await res.text()).toContain("sluice_requests_total");
  });

  it("requires the configured bearer token", async () => {
    const ok = await metricsResponse(metrics, "s3cret-metrics", "Bearer s3cret-metrics");
    expect(ok.status).toBe(200);

    for (const header of [null, "Bearer wrong", "Basic s3cret-metrics", "s3cret-metrics"]) {
      const res = await metricsResponse(metrics, "s3cret-metrics", header);
      expect(res.status, String(header)).toBe(401);
      const body = (await res.json()) as { error: Record<string, unknown> };
      expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
      expect(JSON.stringify(body)).not.toContain("s3cret");
    }
  });
});
