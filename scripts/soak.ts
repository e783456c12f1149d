// `npm run soak -- --minutes N [--concurrency C]` (CONTRACTS §9, §10; issue 11): the built gateway
// as a child process, two upstream channels of one model in another that inject failures before
// headers and cut streams, and C (1,000) requests always in flight for N minutes, some aborted by
// their client. Then SIGTERM, and the verdict: every error a client saw explained, billed tokens
// equal to what the upstreams produced, and the gateway's memory flat from minute 1 to the end.
// Exits 1 when a check fails.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { BUILT_ENTRY, REPO_ROOT, createMainProcesses } from "../test/support/main-process.js";
import { compare, type Check, type UsageRow } from "./soak/compare.js";
import { runLoad } from "./soak/load.js";
import { TRACE_GC, growth, heapAfterFullGc, readCpuSeconds, sampleRss, timeline, type Growth, type MemorySample } from "./soak/memory.js";
import { CHANNELS, ID_PREFIX, MAX_ATTEMPTS, gatewayConfig, type ChannelName } from "./soak/setup.js";
import type { AttemptRecord } from "./soak/upstream.js";

const MEMORY_EVERY_MS = 5_000;
/** SIGTERM lets streams finish for shutdownTimeoutMs (30 s), then the gateway flushes (≤ 15 s). */
const EXIT_WAIT_MS = 60_000;
const MAX_RSS_GROWTH = 0.1;

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { minutes: { type: "string", default: "1" }, concurrency: { type: "string", default: "1000" } } });
  const minutes = Number(values.minutes);
  const concurrency = Number(values.concurrency);
  if (!(minutes > 0) || !Number.isInteger(concurrency) || concurrency < 1) throw new Error("usage: npm run soak -- --minutes N [--concurrency C]");
  const dir = await mkdtemp(join(tmpdir(), "sluice-soak-"));
  const processes = createMainProcesses();
  let upstream: ChildProcess | undefined;
  let passed = false;
  try {
    // 1. The upstreams, then the gateway pointed at them.
    const started = await startUpstreams();
    upstream = started.child;
    const dbPath = join(dir, "soak.db");
    const configPath = join(dir, "config.json");
    await writeFile(configPath, JSON.stringify(gatewayConfig(started.urls, dbPath, join(dir, "gateway.log"))));
    const spawnedAt = Date.now();
    const gateway = await processes.startMain([TRACE_GC, ...BUILT_ENTRY], ["--config", configPath]);
    const pid = gateway.proc.pid!;
    console.error(`soak: ${concurrency} concurrent requests for ${minutes} min through ${gateway.url}`);

    // 2. The load, with the gateway's memory sampled; once no request will start and every started
    //    one has its headers, SIGTERM: the streams still in flight drain.
    const loadStart = Date.now();
    const rss = sampleRss(pid, MEMORY_EVERY_MS);
    const cpuStart = await readCpuSeconds(pid);
    let circuitOpenSkips = 0;
    let cpuSeconds = 0;
    const load = await runLoad({ url: gateway.url, concurrency, durationMs: minutes * 60_000, streamShare: 0.9, abortShare: 0.1 }, async () => {
      rss.stop();
      cpuSeconds = (await readCpuSeconds(pid)) - cpuStart;
      circuitOpenSkips = await countCircuitOpen(gateway.url);
      gateway.proc.kill("SIGTERM");
    });
    const exit = await Promise.race([gateway.exited, new Promise<string>((resolve) => setTimeout(() => resolve("hung"), EXIT_WAIT_MS).unref())]);
    if (exit === "hung") gateway.proc.kill("SIGKILL");

    // 3. What each side counted, and the verdict.
    const attempts = (await Promise.all(CHANNELS.map((name) => fetchAttempts(started.urls[name])))).flat();
    const verdict = compare(load.records, attempts, readUsage(dbPath), CHANNELS.length, MAX_ATTEMPTS, circuitOpenSkips);
    const heap = heapAfterFullGc(gateway.stdout(), loadStart - spawnedAt);
    const checks: Check[] = [
      ...verdict.checks,
      memoryCheck(rss.samples, heap.live, minutes),
      { name: "gateway exits 0 after SIGTERM", ok: exit === 0, detail: `exit ${exit}${exit === 0 ? "" : `; stderr: ${gateway.stderr().slice(-500)}`}` },
    ];
    const inflight = load.inflightSamples;
    const figures: Array<[string, string]> = [
      ["in flight (each second after ramp-up)", inflight.length ? `min ${Math.min(...inflight)}, mean ${Math.round(inflight.reduce((s, n) => s + n, 0) / inflight.length)}` : "-"],
      ["requests per second", (load.records.length / (minutes * 60)).toFixed(0)],
      ...verdict.figures,
      ["gateway RSS, MB@s", timeline(rss.samples, 30_000)],
      ["gateway V8 heap after full GCs: live, MB@s", timeline(heap.live, 30_000)],
      ["  committed, MB@s", timeline(heap.committed, 30_000)],
      ["gateway CPU (cores, mean)", (cpuSeconds / (minutes * 60)).toFixed(2)],
      ["client event-loop delay p99 / max", `${load.loopDelayMs.p99.toFixed(0)} / ${load.loopDelayMs.max.toFixed(0)} ms`],
      ["load average (1 min) at the end", loadavg()[0]!.toFixed(2)],
    ];
    printReport(figures, checks);
    passed = checks.every((c) => c.ok);
    if (!passed) console.log(`\nThe gateway's config, log (warnings and errors) and database are kept in ${dir}`);
    return passed ? 0 : 1;
  } finally {
    upstream?.kill("SIGKILL");
    await processes.killAll();
    if (passed) await rm(dir, { recursive: true, force: true });
  }
}

/** Resident size from minute 1 to the end of the load (from 20 s in a 1-minute run, reported
 *  only: the first minute is warm-up), with the live heap after full collections beside it; each
 *  end the mean over up to 30 s. */
function memoryCheck(rss: MemorySample[], live: MemorySample[], minutes: number): Check {
  const checked = minutes >= 2;
  const from = checked ? 60_000 : 20_000;
  // the end is the end of the full load: after it, the streams in flight wind down
  const to = minutes * 60_000;
  const window = Math.min(30_000, (to - from) / 2);
  const resident = growth(rss, from, to, window);
  // full collections come seldom: the heap's means are over each half
  const heap = growth(live, from, to, (to - from) / 2);
  const span = (g: Growth) => `${g.base.mb.toFixed(0)} → ${g.end.mb.toFixed(0)} MB (${(g.share * 100).toFixed(1)} %)`;
  return {
    name: `RSS growth ${checked ? "< 10 %" : "(checked from 2 min)"}`,
    ok: !checked || (resident !== undefined && resident.share < MAX_RSS_GROWTH),
    detail: resident
      ? `${span(resident)}, means of ${window / 1000} s from ${from / 1000} s and to ${to / 1000} s; live heap after full GCs ${heap ? span(heap) : "?"} (halves)`
      : "too few samples",
  };
}

/** The upstream child process; resolves with each channel's URL once it printed its ports. */
function startUpstreams(): Promise<{ child: ChildProcess; urls: Record<ChannelName, string> }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "scripts/soak/upstream.ts")], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "inherit"] });
  child.on("error", () => {});
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (data: Buffer) => {
      out += data.toString();
      const ready = /ready (\{.*\})/.exec(out);
      if (!ready) return;
      const ports = JSON.parse(ready[1]!) as Record<ChannelName, number>;
      const urls = Object.fromEntries(CHANNELS.map((name) => [name, `http://127.0.0.1:${ports[name]}`])) as Record<ChannelName, string>;
      resolve({ child, urls });
    });
    child.once("exit", (code) => reject(new Error(`the soak upstreams exited (${code}) before listening`)));
  });
}

async function fetchAttempts(url: string): Promise<AttemptRecord[]> {
  const res = await fetch(`${url}/soak/attempts`);
  return (await res.json()) as AttemptRecord[];
}

/** Channels skipped because their breaker was open, from the gateway's metrics. */
async function countCircuitOpen(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^sluice_upstream_attempts_total\{[^}]*outcome="circuit_open"[^}]*\} (\d+)/gm)) total += Number(m[1]);
  return total;
}

function readUsage(path: string): UsageRow[] {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare("SELECT chat_id AS chatId, status, input_tokens AS input, output_tokens AS output FROM usage").all() as Array<{ chatId: string | null; status: number; input: number; output: number }>;
    return rows.map((r) => ({ id: r.chatId?.startsWith(ID_PREFIX) ? Number(r.chatId.slice(ID_PREFIX.length)) : -1, status: r.status, input: r.input, output: r.output }));
  } finally {
    db.close();
  }
}

function printReport(figures: Array<[string, string]>, checks: Check[]): void {
  const width = Math.max(...figures.map(([k]) => k.length), ...checks.map((c) => c.name.length)) + 2;
  const lines = ["", "Soak report", ...figures.map(([k, v]) => `  ${k.padEnd(width)}${v}`), "", "Checks"];
  for (const c of checks) lines.push(`  ${(c.ok ? "PASS " : "FAIL ") + c.name.padEnd(width)}${c.detail}`);
  console.log(lines.join("\n"));
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
