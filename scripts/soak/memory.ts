// The gateway's memory and CPU during the soak, from /proc (Linux): its resident size every few
// seconds, and the live V8 heap after each full (mark-compact) collection, read from the
// `--trace-gc` lines the gateway prints. The live heap tells a leak (it climbs from collection to
// collection) from a resident size that grows while V8 and the allocator settle on their sizes.
import { readCpuUs } from "../../bench/process-cpu.js";
import { readRssMb } from "../../bench/node-process.js";

/** Node's flag that prints a line per collection; the soak starts the gateway with it. */
export const TRACE_GC = "--trace-gc";

export interface MemorySample {
  /** ms since sampling started */
  atMs: number;
  mb: number;
}

export interface Growth {
  /** the mean of each window, at the window's outer edge */
  base: MemorySample;
  end: MemorySample;
  /** (end - base) / base */
  share: number;
}

export function sampleRss(pid: number, everyMs: number) {
  const samples: MemorySample[] = [];
  const start = Date.now();
  const timer = setInterval(() => {
    const atMs = Date.now() - start;
    void readRssMb(pid).then((mb) => samples.push({ atMs, mb }), () => {});
  }, everyMs);
  return { samples, stop: () => clearInterval(timer) };
}

// e.g. "[77:0x6c4e0c0]    61234 ms: Mark-Compact (reduce) 95.2 (120.3) -> 60.1 (118.0) MB, ...":
// live (committed) before -> after
const MARK_COMPACT = /\s(\d+) ms: Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(([\d.]+)\) MB/g;

/** The live and the committed heap after each full collection; `offsetMs`: the process's age
 *  when sampling started. */
export function heapAfterFullGc(traceGcOutput: string, offsetMs: number): { live: MemorySample[]; committed: MemorySample[] } {
  const found = [...traceGcOutput.matchAll(MARK_COMPACT)].map((m) => ({ atMs: Number(m[1]) - offsetMs, live: Number(m[2]), committed: Number(m[3]) }));
  return { live: found.map((f) => ({ atMs: f.atMs, mb: f.live })), committed: found.map((f) => ({ atMs: f.atMs, mb: f.committed })) };
}

/**
 * Growth of the mean over a window from `fromMs` to the mean over the same-length window ending at
 * `toMs`. Means, not single samples: one sample of a heap that collects every few seconds swings by
 * tens of MB either way, more than the growth being looked for.
 */
export function growth(samples: MemorySample[], fromMs: number, toMs: number, windowMs: number): Growth | undefined {
  const mean = (lo: number, hi: number) => {
    const inside = samples.filter((s) => s.atMs >= lo && s.atMs <= hi);
    return inside.length === 0 ? undefined : inside.reduce((sum, s) => sum + s.mb, 0) / inside.length;
  };
  const base = mean(fromMs, fromMs + windowMs);
  const end = mean(toMs - windowMs, toMs);
  if (base === undefined || end === undefined) return undefined;
  return { base: { atMs: fromMs, mb: base }, end: { atMs: toMs, mb: end }, share: (end - base) / base };
}

/** One sample per `stepMs` (the first at or after each step), as "MB@s" for the report. */
export function timeline(samples: MemorySample[], stepMs: number): string {
  const picked: MemorySample[] = [];
  for (const s of samples) if (s.atMs >= (picked.length + 1) * stepMs) picked.push(s);
  return picked.map((s) => `${s.mb.toFixed(0)}@${Math.round(s.atMs / 1000)}`).join(" ");
}

/** CPU time (user + system) the process has used, in seconds. */
export async function readCpuSeconds(pid: number): Promise<number> {
  return (await readCpuUs(pid)) / 1_000_000;
}
