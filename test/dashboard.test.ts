// The Grafana dashboard against reality: a real Prometheus scrapes a real Sluice that served every
// kind of traffic, and every PromQL expression in grafana/dashboards/sluice.json must return data.
// A metric renamed in code but not in the dashboard fails here.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const PROMETHEUS = "/usr/bin/prometheus";
const DASHBOARD = new URL("../grafana/dashboards/sluice.json", import.meta.url);
const APP_KEY = "sk-dashboard-test-app-key";
/** What Grafana would put in place of its variables; 1m spans many 1 s scrapes. */
const GRAFANA_VARIABLES: Record<string, string> = { $__rate_interval: "1m", $__interval: "15s", $__range: "5m" };

interface PromResponse {
  status: string;
  error?: string;
  data?: { resultType: string; result: unknown[] };
}

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

let upstream: Upstream;
let gateway: { url: string; close(): Promise<void> };
let prometheus: { url: string; process: ChildProcess; log: () => string } | undefined;
let workDir: string;

beforeAll(async () => {
  if (!existsSync(PROMETHEUS)) {
    throw new Error(
      `${PROMETHEUS} is missing: this test runs a real Prometheus. .ci/run installs it (apt-get install -y prometheus).`,
    );
  }
  workDir = await mkdtemp(join(tmpdir(), "sluice-dashboard-"));
  upstream = await startUpstream();
  gateway = await startGateway(gatewayConfig(upstream.url));
  prometheus = await startPrometheus(new URL(gateway.url).host, workDir);

  await pollUntil("Prometheus to scrape Sluice", 20_000, () => hasData('up{job="sluice"} == 1'));
  // rate() cannot see a series' first value, so send a second round once the first was scraped:
  // then every series the traffic creates also moves within the rate window
  await sendEveryKindOfTraffic();
  await pollUntil("the first round of traffic to be scraped", 20_000, () => hasData('sluice_requests_total{status="401"}'));
  await sendEveryKindOfTraffic();
}, 60_000);

afterAll(async () => {
  await stopProcess(prometheus?.process);
  await gateway?.close();
  await upstream?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe("grafana dashboard", () => {
  it("every PromQL expression in the dashboard returns data from a real Prometheus", async () => {
    const exprs = dashboardExpressions(JSON.parse(await readFile(DASHBOARD, "utf8")) as { panels?: Panel[] });
    expect(exprs.length).toBeGreaterThan(10);

    let failing: string[] = [];
    const allAnswer = async () => {
      failing = [];
      for (const { title, expr } of exprs) {
        const res = await query(prometheus!.url, expr);
        if (res.status !== "success") failing.push(`${title}: ${expr} → ${res.error ?? res.status}`);
        else if (!hasFiniteValue(res)) failing.push(`${title}: ${expr} → no data`);
      }
      return failing.length === 0;
    };
    const ok = await pollUntil("every dashboard query to return data", 30_000, allAnswer, false);
    expect(failing, `queries without data:\n${failing.join("\n")}`).toEqual([]);
    expect(ok).toBe(true);
  }, 60_000);
});

function gatewayConfig(upstreamUrl: string) {
  return {
    server: { log: { level: "silent", destination: "stdout" } },
    store: { driver: "memory" },
    channels: [{ name: "local", baseUrl: upstreamUrl, key: "channel-key-dashboard", models: ["glm"] }],
    llmModels: [
      { model: "glm", name: "GLM", maxContext: 8000, maxResponse: 1000, inputPrice: 1, outputPrice: 2 },
    ],
    apps: [{ id: "support", name: "Support bot", model: "glm" }],
    apiKeys: [{ name: "support-web", kind: "app", appId: "support", key: APP_KEY }],
  };
}

/** ok non-stream, ok stream, a rejected key (401) and an upstream error (5xx). */
async function sendEveryKindOfTraffic(): Promise<void> {
  const chat = (body: Record<string, unknown>, key = APP_KEY) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "glm", messages: [{ role: "user", content: "Hello" }], ...body }),
    });

  const plain = await chat({ stream: false });
  expect(plain.status).toBe(200);
  await plain.text();

  const streamed = await chat({ stream: true });
  expect(streamed.status).toBe(200);
  expect(await streamed.text()).toContain("[DONE]");

  const rejected = await chat({ stream: false }, "sk-not-a-configured-key");
  expect(rejected.status).toBe(401);
  await rejected.text();

  upstream.behave({ status: 500 });
  const failed = await chat({ stream: false });
  expect(failed.status).toBeGreaterThanOrEqual(500);
  await failed.text();
  upstream.behave({ status: 200 });
}

/** All `targets[].expr` of all panels (rows included), with Grafana's variables substituted. */
function dashboardExpressions(dashboard: { panels?: Panel[] }): { title: string; expr: string }[] {
  const out: { title: string; expr: string }[] = [];
  const walk = (panels: Panel[] = []) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        if (!target.expr) continue;
        let expr = target.expr;
        for (const [name, value] of Object.entries(GRAFANA_VARIABLES)) expr = expr.replaceAll(name, value);
        expect(expr, `unsubstituted variable in "${panel.title}"`).not.toContain("$");
        out.push({ title: panel.title ?? "(untitled)", expr });
      }
      walk(panel.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

/** A panel has something to draw: at least one sample that is a number (histogram_quantile of nothing is NaN). */
function hasFiniteValue(res: PromResponse): boolean {
  const result = res.data?.result ?? [];
  if (res.data?.resultType === "scalar") return Number.isFinite(Number((result as [number, string])[1]));
  return (result as { value: [number, string] }[]).some((s) => Number.isFinite(Number(s.value[1])));
}

async function hasData(expr: string): Promise<boolean> {
  return ((await query(prometheus!.url, expr)).data?.result.length ?? 0) > 0;
}

async function query(base: string, expr: string): Promise<PromResponse> {
  const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(expr)}`);
  return (await res.json()) as PromResponse;
}

async function startPrometheus(target: string, dir: string) {
  const port = await freePort();
  const config = join(dir, "prometheus.yml");
  await writeFile(
    config,
    [
      "global:",
      "  scrape_interval: 1s",
      "  evaluation_interval: 1s",
      "scrape_configs:",
      "  - job_name: sluice",
      "    metrics_path: /metrics",
      "    static_configs:",
      `      - targets: ["${target}"]`,
      "",
    ].join("\n"),
  );
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, "tsdb")}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000); // the tail is enough to say why it failed
  });
  const url = `http://127.0.0.1:${port}`;
  const ready = await pollUntil("Prometheus to be ready", 20_000, async () => {
    if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${log}`);
    const res = await fetch(`${url}/-/ready`).catch(() => undefined);
    return res?.status === 200;
  }, false);
  if (!ready) {
    await stopProcess(child);
    throw new Error(`Prometheus was not ready within 20 s:\n${log}`);
  }
  return { url, process: child, log: () => log };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Polls an outside process (Prometheus has no event to await); throws on timeout unless told not to. */
async function pollUntil(what: string, timeoutMs: number, check: () => Promise<boolean>, mustPass = true) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) {
      if (mustPass) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${prometheus?.log() ?? ""}`);
      return false;
    }
    await sleep(250);
  }
}

async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}
