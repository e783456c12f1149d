// The benchmark's printout: the machine and run, a table per kind of measure, then every figure
// the issues set a target for, checked against it.
import type { HeapSummary } from "./heap-profile.js";
import { execFileSync } from "node:child_process";
import { availableParallelism, cpus, loadavg, totalmem } from "node:os";
import { median, type LoadResult } from "./autocannon-case.js";
import type { LagResult } from "./event-loop-lag.js";
import type { FailoverLatency } from "./failover.js";
import { fleetLines, type FleetResult } from "./fleet/bench.js";
import { batchesLines, type BatchesResult } from "./fleet/batches.js";
import { prefixCostLines, type PrefixCost } from "./fleet/prefix-cost.js";
import { sharedPrefixLines, type SharedPrefixResult } from "./fleet/shared-prefix.js";
import type { CaseResult, TargetName } from "./interleave.js";
import type { LatencyResult } from "./latency.js";
import type { QpmResult } from "./long-qpm.js";
import type { MemoryResult } from "./open-streams.js";
import type { PerKb } from "./per-kb.js";
import { LOAD_GENERATOR, TARGET } from "./process-cpu.js";
import type { ProfileSummary } from "./profile.js";
import { formatScheduling, type SchedulingCase } from "./scheduling.js";
import type { StartUpFigures, StartUpResult } from "./start-up.js";
import { tracingLines, type TracingResult } from "./tracing.js";

export interface MachineFacts {
  date: string;
  cpu: string;
  cores: number;
  memoryGb: number;
  node: string;
  commit: string;
  loadAverageStart: number;
  loadAverageEnd?: number;
}

export interface BenchResults {
  facts: MachineFacts;
  timing: { seconds: number; rounds: number; warmupSeconds: number };
  /** throughput groups by section */
  groups: Record<string, CaseResult[]>;
  latency: Array<{ target: TargetName; name: string; result?: LatencyResult; error?: string }>;
  perKb?: PerKb;
  failover?: FailoverLatency;
  /** requests the failing channel failed during the failover group's load (warm-up included) */
  failoversUnderLoad?: number;
  lag?: LagResult;
  memory?: MemoryResult[];
  startUp?: StartUpResult;
  qpm?: QpmResult;
  scheduling?: SchedulingCase[];
  fleet?: FleetResult;
  batches?: BatchesResult;
  /** the fleet section's shared-prefix workload, and what routing one request by prefix costs */
  sharedPrefix?: SharedPrefixResult;
  prefixCost?: PrefixCost;
  /** the tracing section's span counts */
  tracing?: TracingResult;
  /** sections skipped or failed, one line each */
  notes: string[];
  /** what else the run measured against (the PostgreSQL and Redis of --store postgres), one line each */
  setup: string[];
}

/** The sections whose every process's CPU is shown: Sluice's store servers and worker processes. */
const PROCESS_SECTIONS = ["store", "workers"];

export async function machineFacts(): Promise<MachineFacts> {
  let commit = "unknown";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { encoding: "utf8" }).trim();
    if (dirty) commit += " + uncommitted src/ changes";
  } catch {
    // not a git checkout: the commit stays unknown
  }
  return {
    date: new Date().toISOString().replace("T", " ").slice(0, 16) + " UTC",
    cpu: cpus()[0]?.model.trim() ?? "unknown CPU",
    cores: availableParallelism(),
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    commit,
    loadAverageStart: loadavg()[0] ?? 0,
  };
}

export function printReport(r: BenchResults): void {
  const f = r.facts;
  console.log(`\nSluice benchmark, ${f.date}: ${f.cpu}, ${f.cores} cores, ${f.memoryGb} GB, Node ${f.node}, commit ${f.commit}
load average ${f.loadAverageStart.toFixed(2)} at start, ${f.loadAverageEnd?.toFixed(2) ?? "?"} at end (other work on the machine moves every figure)
throughput: autocannon from the bench process, 32 connections unless said, ${r.timing.seconds} s per case in ${r.timing.rounds} interleaved rounds after ${r.timing.warmupSeconds} s warm-up
(per-KB: half that); CPU us/req from /proc/PID/stat of the target's and the upstream's processes; a ratio is the median of the per-round ratios (lowest-highest)\n`);
  if (r.setup.length > 0) console.log(`${r.setup.join("\n")}\n`);

  const throughput = Object.entries(r.groups).flatMap(([section, cases]) =>
    cases.map((c) => [
      section,
      `${c.target} ${c.name}`,
      num(c.load?.rps, 0),
      c.slices ? `${num(Math.min(...c.slices.map((s) => s.rps)), 0)}-${num(Math.max(...c.slices.map((s) => s.rps)), 0)}` : c.error ? "error" : "",
      num(c.load?.cpuUs, 0),
      num(c.load?.upstreamCpuUs, 0),
      num(c.load?.p50, 1),
      num(c.load?.p99, 1),
      num(c.load?.failed, 0),
      c.load ? `${(c.load.clientBusy * 100).toFixed(0)}%` : "",
    ]),
  );
  if (throughput.length > 0) {
    console.log(alignTable([["section", "case", "RPS", "rounds RPS", "CPU us/req", "upstream us/req", "p50 ms", "p99 ms", "failed", "bench busy"], ...throughput], 2));
  }

  if (r.latency.length > 0) {
    const direct = (name: string) => r.latency.find((l) => l.target === "direct" && l.name === name)?.result;
    const rows = r.latency.map((l) => {
      const d = l.target === "direct" ? undefined : direct(l.name);
      return [
        `${l.target} ${l.name}`,
        num(l.result?.p50, 3),
        num(l.result?.p99, 3),
        num(diff(l.result?.p50, d?.p50), 3),
        num(diff(l.result?.p99, d?.p99), 3),
        num(l.result?.ttftP50, 3),
        num(diff(l.result?.ttftP50, d?.ttftP50), 3),
        num(diff(l.result?.ttftP99, d?.ttftP99), 3),
      ];
    });
    console.log(`\nOne connection, 500 requests after 50 warm-up; "added" = over the upstream alone (ms):\n`);
    console.log(alignTable([["case", "p50", "p99", "added p50", "added p99", "TTFT p50", "added TTFT p50", "added TTFT p99"], ...rows]));
  }

  printProcesses(r);
  printDetails(r);
  if (r.scheduling) console.log(formatScheduling(r.scheduling));
  const rows = checks(r);
  const measured = rows.filter((row) => /\d/.test(row[1]!)); // the others' sections did not run
  console.log(`\n${alignTable([["check", "measured", "target", "result"], ...measured])}`);
  if (measured.length < rows.length) console.log(`(${rows.length - measured.length} checks without a figure left out: their sections did not run or failed)`);
  if (r.notes.length > 0) console.log(`\nNot measured:\n${r.notes.map((n) => `  - ${n}`).join("\n")}`);
}

/** CPU µs per request of every process in the PROCESS_SECTIONS, and the cores they kept busy. */
function printProcesses(r: BenchResults): void {
  const cases = PROCESS_SECTIONS.flatMap((section) => (r.groups[section] ?? []).map((c) => ({ section, c, load: c.load })));
  // Sluice's processes first, the load generator last, the others as they came
  const rank = (l: string) => (l === TARGET ? 0 : l.startsWith(`${TARGET} child `) ? 1 : l === LOAD_GENERATOR ? 3 : 2);
  const labels = [...new Set(cases.flatMap(({ load }) => Object.keys(load?.processCpuUs ?? {})))].sort((a, b) => rank(a) - rank(b) || childNumber(a) - childNumber(b));
  if (labels.length === 0) return;
  const header = labels.map((l) => (l === TARGET ? "Sluice/primary" : childNumber(l) > 0 ? `worker ${childNumber(l)}` : l));
  const rows = cases.map(({ section, c, load }) => {
    const us = load?.processCpuUs ?? {};
    const total = Object.values(us).reduce((a, b) => a + b, 0);
    return [`${section} ${c.name}`, num(load?.rps, 0), ...labels.map((l) => num(us[l], 0)), num(total, 0), load ? (total * load.rps / 1e6).toFixed(2) : "-"];
  });
  console.log(`\nCPU us per request of each process (${LOAD_GENERATOR}: the bench's own, autocannon), and the cores all of them kept busy:\n`);
  console.log(alignTable([["case", "RPS", ...header, "total", "cores"], ...rows]));
}

const childNumber = (label: string) => Number(/ child (\d+)$/.exec(label)?.[1] ?? 0);

/** The per-KB, failover, memory, lag and QPM figures, each a few lines. */
function printDetails(r: BenchResults): void {
  const lines: string[] = [];
  if (r.perKb) {
    const k = r.perKb;
    lines.push(`cost per KB of request body (slope over 0.2-200 KB): floor ${num(k.floorUsPerKb, 2)} us/KB, Sluice ${num(k.sluiceUsPerKb, 2)} us/KB`);
    lines.push(`31 KB prompt on a 32k model (byte bound fails, prompt counted): ${num(k.fitRatio, 2)}x Sluice's CPU for the same body on a 256k model`);
  }
  const fo = r.failover;
  if (r.failoversUnderLoad !== undefined) lines.push(`failover under load: ${r.failoversUnderLoad} failed attempts (warm-up included), each followed by a retry on the other channel`);
  if (fo) {
    lines.push(
      `failover at one connection: ${fo.failedOver} of ${fo.requests} requests failed over; p50 ${num(fo.failedOverP50, 3)} ms against ${num(fo.cleanP50, 3)} ms, ` +
        `p99 ${num(fo.failedOverP99, 3)} ms against ${num(fo.cleanP99, 3)} ms (added p99 ${num(fo.failedOverP99 - fo.cleanP99, 3)} ms)`,
    );
  }
  for (const m of r.memory ?? []) {
    lines.push(m.error ? `RSS, ${m.streams} open streams through ${m.target}: ${m.error}` : `RSS, ${m.streams} open streams through ${m.target}: ${num(m.openMb, 0)} MB (${num(m.idleMb, 0)} MB before)`);
  }
  const s = r.startUp;
  if (s) lines.push(`start-up, median of ${s.runs} fresh Sluices: ${startUpText(s)}`);
  if (s?.baseline) lines.push(`start-up of the baseline ${s.baseline.dist}, in turn with them: ${startUpText(s.baseline)}`);
  if (r.lag) lines.push(`event-loop lag under load + a 2 MB one-word body/s: p99 ${num(r.lag.p99Ms, 1)} ms, max ${num(r.lag.maxMs, 1)} ms (2 MB answers ${[...new Set(r.lag.bigStatuses)].join("/")})`);
  if (r.qpm) {
    const series = r.qpm.slices.map((s) => `${num(s.cpuUs, 0)}`).join(" ");
    lines.push(`budgeted+QPM key, ${r.qpm.seconds} s in 10 s slices, CPU us/req: ${series}; RPS ${r.qpm.slices.map((s) => num(s.rps, 0)).join(" ")}`);
  }
  if (r.fleet) lines.push(...fleetLines(r.fleet));
  if (r.batches) lines.push(...batchesLines(r.batches));
  if (r.sharedPrefix) lines.push(...sharedPrefixLines(r.sharedPrefix));
  if (r.prefixCost) lines.push(...prefixCostLines(r.prefixCost));
  if (r.tracing) lines.push(...tracingLines(r.tracing));
  if (lines.length > 0) console.log(`\n${lines.join("\n")}`);
}

function startUpText(s: StartUpFigures): string {
  const runs = s.readyRuns.map((ms) => num(ms, 0)).join(" ");
  return `spawn to /healthz ${num(s.readyMs, 0)} ms (${runs}; CPU ${num(s.readyCpuMs, 0)} ms), first request ${num(s.firstMs, 1)} ms (CPU ${num(s.firstCpuMs, 0)} ms), second ${num(s.secondMs, 1)} ms`;
}

function checks(r: BenchResults): string[][] {
  const find = (section: string, target: TargetName, name?: string) => r.groups[section]?.find((c) => c.target === target && (name === undefined || c.name === name));
  const rps = (l: LoadResult) => l.rps;
  const cpu = (l: LoadResult) => l.cpuUs;
  const lat = (target: TargetName, name: string) => r.latency.find((l) => l.target === target && l.name === name)?.result;
  const added = (name: string, of: (l: LatencyResult) => number | undefined) => {
    const s = lat("sluice", name);
    const d = lat("direct", name);
    return s && d ? diff(of(s), of(d)) : undefined;
  };
  const memory = (streams: number) => r.memory?.find((m) => m.target === "sluice" && m.streams === streams)?.openMb;
  const k = r.perKb;
  const fo = r.failover;
  const sched = (queue: string, name: string) => r.scheduling?.find((c) => c.queue === queue && c.case === name)?.ratio;
  const sp = r.sharedPrefix?.figures;
  const rows = [
    ratio("Sluice/floor RPS, non-stream", find("non-stream", "sluice"), find("non-stream", "floor"), rps, ">=", 0.6),
    ratio("Sluice/floor RPS, 20-chunk stream", find("stream", "sluice"), find("stream", "floor"), rps, ">=", 0.8),
    ratio("Sluice/floor RPS, realistic stream", find("realistic", "sluice"), find("realistic", "floor"), rps, ">=", 0.8),
    ratio("Sluice/floor CPU per request, non-stream", find("non-stream", "sluice", "non-stream"), find("non-stream", "floor"), cpu, "<=", 1.6),
    ratio("Sluice/floor CPU per request, 20-chunk stream", find("stream", "sluice"), find("stream", "floor"), cpu, "<=", 1.3),
    ratio("Sluice/floor CPU per request, realistic stream", find("realistic", "sluice"), find("realistic", "floor"), cpu, "<=", 1.3),
    limit("Sluice/floor cost per KB of body", k?.sluiceUsPerKb !== undefined && k.floorUsPerKb ? k.sluiceUsPerKb / k.floorUsPerKb : undefined, "<=", 2, "x"),
    ratio("Sluice chatId/stateless RPS", find("non-stream", "sluice", "chatId"), find("non-stream", "sluice", "non-stream"), rps, ">=", 0.8),
    ratio("logBodies all/off CPU per request, non-stream", find("bodies", "sluice", "logBodies all"), find("bodies", "sluice", "logBodies off"), cpu, "<=", 1.1),
    limit("Sluice added TTFT p50, one connection", added("stream", (l) => l.ttftP50), "<=", 0.5, "ms"),
    info("Sluice added p50 / p99, one connection, non-stream", `${num(added("non-stream", (l) => l.p50), 3)} / ${num(added("non-stream", (l) => l.p99), 3)} ms`),
    limit("Sluice RSS, 1,000 open streams", memory(1000), "<=", 250, "MB"),
    info("Sluice RSS, 5,000 open streams", memory(5000) === undefined ? "n/a" : `${num(memory(5000), 0)} MB`),
    ratio("failover RPS: 1 of 2 channels failing 20 % / healthy", find("failover", "sluice", "1 of 2 failing 20 %"), find("failover", "sluice", "2 healthy channels"), rps, ">=", 0.9),
    info("added p99 of a failed-over request, one connection", fo ? `${num(fo.failedOverP99 - fo.cleanP99, 3)} ms` : "n/a"),
    limit("Sluice event-loop lag p99, load + 2 MB word/s", r.lag?.p99Ms, "<", 20, "ms"),
    limit("Sluice spawn to /healthz 200, median", r.startUp?.readyMs, "<=", 800, "ms"),
    limit("budgeted+QPM: CPU/req at minute 2 / first 10 s", r.qpm?.minute2CpuUs !== undefined && r.qpm.firstCpuUs ? r.qpm.minute2CpuUs / r.qpm.firstCpuUs : undefined, "<=", 1.05, "x"),
    info("Sluice/floor RPS, embeddings", ratioText(find("embeddings", "sluice"), find("embeddings", "floor"), rps)),
    info("Sluice/floor CPU per request, embeddings", ratioText(find("embeddings", "sluice"), find("embeddings", "floor"), cpu)),
    ratio("Messages/chat CPU per request, 20-chunk stream", find("dialects", "sluice", "messages stream"), find("dialects", "sluice", "chat stream"), cpu, "<=", 1.15),
    ratio("Responses/chat CPU per request, 20-chunk stream", find("dialects", "sluice", "responses stream"), find("dialects", "sluice", "chat stream"), cpu, "<=", 1.15),
    ratio("tracing sampleRatio 0/absent CPU per request, 20-chunk stream", find("tracing", "sluice", "tracing sampleRatio 0"), find("tracing", "sluice", "tracing absent"), cpu, "<=", 1.01),
    ratio("tracing every request sampled/absent CPU per request", find("tracing", "sluice", "tracing sampleRatio 1"), find("tracing", "sluice", "tracing absent"), cpu, "<=", 1.15),
    info("31 KB on 32k model / on 256k model, Sluice CPU", k?.fitRatio === undefined ? "n/a" : `${num(k.fitRatio, 2)}x`),
    ratio("PostgreSQL+Redis chatId/stateless RPS", find("store", "sluice", "PostgreSQL+Redis chatId"), find("store", "sluice", "PostgreSQL+Redis stateless"), rps, ">=", 0.7),
    info("SQLite chatId/stateless RPS (same rounds)", ratioText(find("store", "sluice", "SQLite chatId"), find("store", "sluice", "SQLite stateless"), rps)),
    info("PostgreSQL+Redis/SQLite RPS, stateless", ratioText(find("store", "sluice", "PostgreSQL+Redis stateless"), find("store", "sluice", "SQLite stateless"), rps)),
    info("PostgreSQL+Redis/SQLite RPS, chatId", ratioText(find("store", "sluice", "PostgreSQL+Redis chatId"), find("store", "sluice", "SQLite chatId"), rps)),
    ratio("2 workers/1 worker RPS, PostgreSQL+Redis, stateless", find("workers", "sluice", "2 workers stateless"), find("workers", "sluice", "1 worker stateless"), rps, ">=", 1.3),
    limit("scheduling: interactive/flood median wait, gateway queue", sched("gateway queue", "priority"), "<=", 0.2, "x"),
    info("scheduling: interactive/flood median wait, engine FIFO", num(sched("engine FIFO", "priority"), 2)),
    limit("scheduling: app B/app A median wait (30 of A queued), gateway queue", sched("gateway queue", "fairness"), "<=", 0.33, "x"),
    info("scheduling: app B/app A median wait, engine FIFO", num(sched("engine FIFO", "fairness"), 2)),
    limit("fleet: Sluice/random TTFT p50", r.fleet ? r.fleet.even.sluice.ttftP50 / r.fleet.even.random.ttftP50 : undefined, "<=", 0.5, "x"),
    limit("fleet: Sluice token cache hit ratio", r.fleet?.even.sluice.cacheHitRatio, ">=", 0.85, "x"),
    limit("fleet, one replica slow: Sluice/random TTFT p95", r.fleet ? r.fleet.slowed.sluice.ttftP95 / r.fleet.slowed.random.ttftP95 : undefined, "<=", 1, "x"),
    limit("fleet, shared prefixes: Sluice/random TTFT p50", sp ? sp.prefix.ttftP50 / sp.random.ttftP50 : undefined, "<=", 0.25, "x"),
    limit("fleet, shared prefixes: Sluice token cache hit ratio", sp?.prefix.cacheHitRatio, ">=", 0.8, "x"),
    info("fleet, shared prefixes: affinity session/random TTFT p50", sp ? num(sp.session.ttftP50 / sp.random.ttftP50, 2) : "n/a"),
    info("routing by prefix: score of 8 channels, 100K-token prompt", r.prefixCost ? `${num(r.prefixCost.scoreUs, 1)} µs (hash ${num(r.prefixCost.hashUs, 0)} µs)` : "n/a"),
    limit("batches: interactive TTFT p95 with a 2,000-line batch / without", r.batches ? r.batches.ttftP95WithBatch / r.batches.ttftP95Alone : undefined, "<=", 1.1, "x"),
    limit("batches: batch lines/s / idle capacity the sessions leave", r.batches ? r.batches.batchLinesPerSecond / r.batches.idleLinesPerSecond : undefined, ">=", 0.7, "x"),
    info("2 workers/1 worker RPS, PostgreSQL+Redis, chatId", ratioText(find("workers", "sluice", "2 workers chatId"), find("workers", "sluice", "1 worker chatId"), rps)),
  ];
  return rows;
}

type Op = ">=" | "<=" | "<";
const holds = (v: number, op: Op, target: number) => (op === ">=" ? v >= target : op === "<=" ? v <= target : v < target);

/** The per-round ratios of two interleaved cases of one group. */
function roundRatios(a: CaseResult | undefined, b: CaseResult | undefined, metric: (l: LoadResult) => number | undefined): number[] {
  const x = a?.slices ?? [];
  const y = b?.slices ?? [];
  if (x.length === 0 || x.length !== y.length) return [];
  return x.flatMap((s, i) => {
    const top = metric(s);
    const bottom = metric(y[i]!);
    return top === undefined || !bottom ? [] : [top / bottom];
  });
}

function ratioText(a: CaseResult | undefined, b: CaseResult | undefined, metric: (l: LoadResult) => number | undefined): string {
  const ratios = roundRatios(a, b, metric);
  return ratios.length === 0 ? "n/a" : `${median(ratios).toFixed(3)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`;
}

function ratio(label: string, a: CaseResult | undefined, b: CaseResult | undefined, metric: (l: LoadResult) => number | undefined, op: Op, target: number): string[] {
  const ratios = roundRatios(a, b, metric);
  const value = ratios.length === 0 ? undefined : median(ratios);
  return [label, ratioText(a, b, metric), `${op} ${target}x`, verdict(value, op, target)];
}

function limit(label: string, value: number | undefined, op: Op, target: number, unit: string): string[] {
  const shown = value === undefined || Number.isNaN(value) ? "n/a" : unit === "x" ? `${value.toFixed(2)}x` : `${value.toFixed(unit === "ms" ? 3 : 0)} ${unit}`;
  return [label, shown, `${op} ${target}${unit === "x" ? "x" : ` ${unit}`}`, verdict(value, op, target)];
}

const info = (label: string, shown: string): string[] => [label, shown, "(info)", ""];

function verdict(value: number | undefined, op: Op, target: number): string {
  if (value === undefined || Number.isNaN(value)) return "n/a";
  return holds(value, op, target) ? "PASS" : "MISS";
}

export function printProfile(mode: string, load: LoadResult, p: ProfileSummary): void {
  const processes = p.processes > 1 ? ` in ${p.processes} processes` : "";
  console.log(`\nSluice CPU profile under the ${mode} load: ${load.rps.toFixed(0)} RPS, ${num(load.cpuUs, 0)} us/req; ${(p.busyMs / 1000).toFixed(1)} s of busy samples${processes} (start-up and warm-up included)\n`);
  const share = (ms: number) => `${((ms / p.busyMs) * 100).toFixed(1)}%`;
  console.log(alignTable([["module", "self ms", "share"], ...p.modules.map((m) => [m.name, m.ms.toFixed(0), share(m.ms)])]));
  console.log(`\n${alignTable([["function", "self ms", "share"], ...p.functions.map((m) => [m.name, m.ms.toFixed(0), share(m.ms)])])}`);
}

export function printHeapProfile(mode: string, load: LoadResult, h: HeapSummary): void {
  const requests = load.answered;
  console.log(`\nSluice heap profile under the ${mode} load: ${load.rps.toFixed(0)} RPS, ${requests} requests; ${(h.bytes / 1e6).toFixed(1)} MB reached the old generation (${(h.bytes / requests).toFixed(0)} B a request), sampled every 4 KB\n`);
  console.log(alignTable([["where it was made (innermost frame of Sluice's < its callers  >> what made it)", "MB", "B/request"], ...h.sites.map((s) => [s.site.slice(0, 200), (s.bytes / 1e6).toFixed(2), (s.bytes / requests).toFixed(0)])]));
}

function diff(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a - b;
}

function num(value: number | undefined, digits: number): string {
  return value === undefined || Number.isNaN(value) ? "-" : value.toFixed(digits);
}

/** Columns before `leftColumns` are text (left-aligned), the rest figures (right-aligned). */
function alignTable(rows: string[][], leftColumns = 1): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => r.map((cell, i) => (i < leftColumns ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ");
  return [line(rows[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(line)].join("\n");
}
