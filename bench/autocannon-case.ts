// One throughput case: autocannon against one target for a fixed time, counting only 2xx answers,
// with the CPU time the target, the upstream and any other process named spent meanwhile.
import autocannon from "autocannon";
import { performance } from "node:perf_hooks";
import { cpuPerRequest, sampleCpu, targetCpu, type Pids } from "./process-cpu.js";

export type { Pids } from "./process-cpu.js";

export const CONNECTIONS = 32;

/** What to send and where. `body(i)` gives connection i its request body (e.g. its own chatId). */
export interface LoadSpec {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: (connection: number) => string;
  connections: number;
}

export interface LoadResult {
  /** Successful (2xx) requests per second. */
  rps: number;
  /** Successful requests, all answered requests (any status) and the seconds they took: what
   *  slices of one case add up. */
  ok: number;
  answered: number;
  seconds: number;
  /** Autocannon latency percentiles, ms. */
  p50: number;
  p99: number;
  /** Connection errors, timeouts and non-2xx answers. */
  failed: number;
  /** Share of the time the bench's own event loop (the load generator) was busy. */
  clientBusy: number;
  /** CPU time the target process (and its children) spent per answered request (user + system),
   *  µs; steadier than RPS on a machine whose cores the load generator shares. */
  cpuUs?: number;
  /** The same for the upstream process. */
  upstreamCpuUs?: number;
  /** Each process's CPU µs per answered request, by the labels of bench/process-cpu.ts. */
  processCpuUs: Record<string, number>;
}

export async function runLoad(spec: LoadSpec, seconds: number, pids: Pids = {}): Promise<LoadResult> {
  const before = performance.eventLoopUtilization();
  const cpuBefore = await sampleCpu(pids);
  const result = await fire(spec, seconds);
  const cpuAfter = await sampleCpu(pids);
  const requests = result["2xx"] + result.non2xx;
  const processCpuUs = cpuPerRequest(cpuBefore, cpuAfter, requests);
  return {
    cpuUs: targetCpu(processCpuUs),
    upstreamCpuUs: processCpuUs.upstream,
    processCpuUs,
    rps: result["2xx"] / result.duration,
    ok: result["2xx"],
    answered: requests,
    seconds: result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: result.errors + result.non2xx,
    clientBusy: performance.eventLoopUtilization(before).utilization,
  };
}

function fire(spec: LoadSpec, seconds: number): Promise<autocannon.Result> {
  let next = 0;
  return autocannon({
    url: spec.origin + spec.path,
    method: "POST",
    headers: spec.headers,
    body: spec.body(0),
    connections: spec.connections,
    duration: seconds,
    setupClient: (client) => client.setBody(spec.body(next++)),
  });
}

/** One result for several slices of the same case: sums where sums mean something, the median of
 *  the slices' percentiles where percentiles cannot be merged (a slice disturbed by other work on
 *  the machine moves a median less than a maximum). */
export function mergeLoads(slices: LoadResult[]): LoadResult {
  const ok = sum(slices.map((s) => s.ok));
  const seconds = sum(slices.map((s) => s.seconds));
  const answered = sum(slices.map((s) => s.answered));
  const cpu = (of: (s: LoadResult) => number | undefined) =>
    answered > 0 && slices.every((s) => of(s) !== undefined) ? sum(slices.map((s) => of(s)! * s.answered)) / answered : undefined;
  return {
    rps: ok / seconds,
    ok,
    answered,
    seconds,
    p50: median(slices.map((s) => s.p50)),
    p99: median(slices.map((s) => s.p99)),
    failed: sum(slices.map((s) => s.failed)),
    clientBusy: sum(slices.map((s) => s.clientBusy * s.seconds)) / seconds,
    cpuUs: cpu((s) => s.cpuUs),
    upstreamCpuUs: cpu((s) => s.upstreamCpuUs),
    processCpuUs: Object.fromEntries(
      Object.keys(slices[0]?.processCpuUs ?? {}).flatMap((label) => {
        const us = cpu((s) => s.processCpuUs[label]);
        return us === undefined ? [] : [[label, us]];
      }),
    ),
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
