// A real Prometheus (Debian's /usr/bin/prometheus) for tests: scrapes one target every second,
// evaluates the given rule files every second, and answers PromQL over its HTTP API.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort } from "./main-process.js";

export const PROMETHEUS = "/usr/bin/prometheus";

export interface PromResponse {
  status: string;
  error?: string;
  data?: { resultType: string; result: unknown[] };
}

export interface Prometheus {
  url: string;
  /** the tail of its stderr, to say why something failed */
  log(): string;
  query(expr: string): Promise<PromResponse>;
  /** values of a label among the series `match` selects (what Grafana's label_values() lists) */
  labelValues(label: string, match: string): Promise<string[]>;
  /** label names of the series of one metric */
  labelNames(metric: string): Promise<string[]>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** host:port to scrape at /metrics */
  target: string;
  job: string;
  /** a folder of its own: config and TSDB go there */
  dir: string;
  ruleFiles?: string[];
  /** --enable-feature values, e.g. exemplar-storage */
  features?: string[];
}

export async function startPrometheus(opts: PrometheusOptions): Promise<Prometheus> {
  if (!existsSync(PROMETHEUS)) {
    throw new Error(`${PROMETHEUS} is missing: this test runs a real Prometheus. Install it with: apt-get install -y prometheus`);
  }
  const port = await freePort();
  const config = join(opts.dir, "prometheus.yml");
  await writeFile(config, prometheusConfig(opts));
  const child = spawn(
    PROMETHEUS,
    [`--config.file=${config}`, `--storage.tsdb.path=${join(opts.dir, "tsdb")}`, `--web.listen-address=127.0.0.1:${port}`, ...(opts.features ?? []).map((f) => `--enable-feature=${f}`)],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  child.on("error", (err) => (log += `\nspawn failed: ${err.message}`));
  child.stderr?.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000); // the tail is enough to say why it failed
  });

  const url = `http://127.0.0.1:${port}`;
  const api = async <T>(path: string): Promise<T> => ((await (await fetch(`${url}${path}`)).json()) as { data: T }).data;
  const prometheus: Prometheus = {
    url,
    log: () => log,
    query: async (expr) => (await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`)).json() as Promise<PromResponse>,
    labelValues: (label, match) => api(`/api/v1/label/${label}/values?match[]=${encodeURIComponent(match)}`),
    labelNames: (metric) => api(`/api/v1/labels?match[]=${encodeURIComponent(metric)}`),
    stop: () => stopProcess(child),
  };

  const ready = await pollUntil("Prometheus to be ready", 20_000, async () => {
    if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${log}`);
    const res = await fetch(`${url}/-/ready`).catch(() => undefined);
    return res?.status === 200;
  }, { mustPass: false });
  if (!ready) {
    await stopProcess(child);
    throw new Error(`Prometheus was not ready within 20 s:\n${log}`);
  }
  return prometheus;
}

function prometheusConfig(opts: PrometheusOptions): string {
  return [
    "global:",
    "  scrape_interval: 1s",
    "  evaluation_interval: 1s",
    ...(opts.ruleFiles?.length ? ["rule_files:", ...opts.ruleFiles.map((f) => `  - ${JSON.stringify(f)}`)] : []),
    "scrape_configs:",
    `  - job_name: ${opts.job}`,
    "    metrics_path: /metrics",
    "    static_configs:",
    `      - targets: [${JSON.stringify(opts.target)}]`,
    "",
  ].join("\n");
}

/** Polls an outside process (Prometheus has no event to await); throws on timeout unless told not to. */
export async function pollUntil(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  { mustPass = true, log = () => "" }: { mustPass?: boolean; log?: () => string } = {},
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) {
      if (mustPass) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${log()}`);
      return false;
    }
    await sleep(250);
  }
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}
