// The benchmark's printout: one table of every case, then the ratios against the targets.
import { CONNECTIONS, median, type LoadResult } from "./autocannon-case.js";
import type { LagResult } from "./event-loop-lag.js";
import type { LatencyResult } from "./latency.js";

export type TargetName = "direct" | "floor" | "sluice";
export type Mode = "non-stream" | "stream" | "chatId";

export interface CaseResult {
  target: TargetName;
  mode: Mode;
  load?: LoadResult;
  /** RPS of each interleaved round, in round order */
  rounds?: number[];
  latency?: LatencyResult;
  error?: string;
}

export interface MemoryResult {
  streams: number;
  sluiceIdleMb?: number;
  sluiceMb?: number;
  floorMb?: number;
  error?: string;
}

const COLUMNS = ["case", "RPS", "CPU us/req", "p50 ms", "p99 ms", "failed", "client busy", "1c p50 ms", "1c p99 ms", "added p50 ms", "TTFT p50 ms", "added TTFT ms"];

export interface RunSettings {
  seconds: number;
  rounds: number;
  warmupSeconds: number;
  /** 1-minute load average and core count when the run began: other work skews every number. */
  loadAverage: number;
  cores: number;
}

export function printReport(cases: CaseResult[], memory: MemoryResult, run: RunSettings, lag?: LagResult | string): void {
  const find = (target: TargetName, mode: Mode) => cases.find((c) => c.target === target && c.mode === mode);
  const rows = cases.map((c) => {
    // The chatId case is a non-stream request, so its baseline is the direct non-stream one.
    const direct = find("direct", c.mode === "stream" ? "stream" : "non-stream");
    return [
      `${c.target} ${c.mode}`,
      num(c.load?.rps, 0),
      num(c.load?.cpuUs, 0),
      num(c.load?.p50, 1),
      num(c.load?.p99, 1),
      num(c.load?.failed, 0),
      c.load ? `${(c.load.clientBusy * 100).toFixed(0)}%` : "-",
      num(c.latency?.p50, 3),
      num(c.latency?.p99, 3),
      c.target === "direct" ? "" : num(diff(c.latency?.p50, direct?.latency?.p50), 3),
      num(c.latency?.ttftP50 ?? undefined, 3),
      c.target === "direct" || c.mode !== "stream" ? "" : num(diff(c.latency?.ttftP50, direct?.latency?.ttftP50), 3),
    ];
  });
  console.log(`\nSluice benchmark: autocannon ${CONNECTIONS} connections, ${run.seconds} s per case in ${run.rounds} interleaved rounds,
after ${run.warmupSeconds} s warm-up; an RPS ratio is the median of its ${run.rounds} per-round ratios (lowest-highest);
1c = one sequential connection (500 requests after 50 warm-up);
client busy = the bench process's event loop (load generator + test upstream);
CPU us/req = CPU time of the target's own process per request (the upstream runs inside the bench);
machine load average at start ${run.loadAverage.toFixed(2)} on ${run.cores} cores\n`);
  console.log(alignTable([COLUMNS, ...rows]));

  const sluice = (mode: Mode) => find("sluice", mode);
  const floor = (mode: Mode) => find("floor", mode);
  const rssNote = memory.sluiceIdleMb === undefined ? "" : ` (idle ${num(memory.sluiceIdleMb, 0)} MB; floor proxy ${num(memory.floorMb, 0)} MB)`;
  const checks: string[][] = [
    ratioCheck("Sluice/floor RPS, non-stream", sluice("non-stream"), floor("non-stream"), 0.6),
    ratioCheck("Sluice/floor RPS, stream", sluice("stream"), floor("stream"), 0.8),
    ratioCheck("Sluice chatId/stateless RPS", sluice("chatId"), sluice("non-stream"), 0.8),
    info("floor/Sluice CPU per request, non-stream", floor("non-stream")?.load?.cpuUs, sluice("non-stream")?.load?.cpuUs),
    info("floor/Sluice CPU per request, stream", floor("stream")?.load?.cpuUs, sluice("stream")?.load?.cpuUs),
    info("stateless/chatId CPU per request", sluice("non-stream")?.load?.cpuUs, sluice("chatId")?.load?.cpuUs),
    limitCheck("Sluice added p50, 1 connection", diff(sluice("non-stream")?.latency?.p50, find("direct", "non-stream")?.latency?.p50), 1, "ms"),
    limitCheck("Sluice added TTFT p50, 1 connection", diff(sluice("stream")?.latency?.ttftP50, find("direct", "stream")?.latency?.ttftP50), 1, "ms"),
    limitCheck(`Sluice RSS at ${memory.streams} open streams`, memory.sluiceMb, 250, "MB", rssNote),
    limitCheck(
      "Sluice event-loop lag p99, load + 2 MB word/s",
      typeof lag === "object" ? lag.p99Ms : undefined,
      20,
      "ms",
      typeof lag === "object" ? ` (max ${lag.maxMs.toFixed(1)} ms; 2 MB answers ${[...new Set(lag.bigStatuses)].join("/")})` : "",
    ),
  ];
  console.log(`\n${alignTable([["check", "measured", "target", "result"], ...checks])}`);

  const problems = cases.filter((c) => c.error).map((c) => `${c.target} ${c.mode}: ${c.error}`);
  if (memory.error) problems.push(`open streams: ${memory.error}`);
  if (typeof lag === "string") problems.push(`event-loop lag: ${lag}`);
  if (problems.length > 0) console.log(`\nNot measured:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
}

/** A ratio shown beside the checks, with no target of its own. */
function info(label: string, value: number | undefined, base: number | undefined): string[] {
  return [label, value !== undefined && base ? `${(value / base).toFixed(2)}x` : "n/a", "(info)", ""];
}

/** The median of the per-round RPS ratios of two interleaved cases, with their range. */
function ratioCheck(label: string, value: CaseResult | undefined, base: CaseResult | undefined, min: number): string[] {
  const a = value?.rounds ?? [];
  const b = base?.rounds ?? [];
  const ratios = a.length > 0 && a.length === b.length ? a.map((rps, i) => rps / b[i]!) : [];
  const ratio = ratios.length > 0 ? median(ratios) : undefined;
  const shown = ratio === undefined ? "n/a" : `${ratio.toFixed(2)}x (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`;
  return [label, shown, `>= ${min}x`, verdict(ratio, (r) => r >= min)];
}

function limitCheck(label: string, value: number | undefined, max: number, unit: string, note = ""): string[] {
  return [label, value === undefined ? "n/a" : `${value.toFixed(unit === "ms" ? 3 : 0)} ${unit}${note}`, `<= ${max} ${unit}`, verdict(value, (v) => v <= max)];
}

function verdict(value: number | undefined, ok: (v: number) => boolean): string {
  if (value === undefined || Number.isNaN(value)) return "n/a";
  return ok(value) ? "PASS" : "MISS";
}

function diff(a: number | null | undefined, b: number | null | undefined): number | undefined {
  return a == null || b == null ? undefined : a - b;
}

function num(value: number | undefined, digits: number): string {
  return value === undefined || Number.isNaN(value) ? "-" : value.toFixed(digits);
}

function alignTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ");
  return [line(rows[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(line)].join("\n");
}
