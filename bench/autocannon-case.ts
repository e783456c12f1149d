// One throughput case: autocannon against one target for a fixed time, counting only 2xx answers.
import autocannon from "autocannon";
import { performance } from "node:perf_hooks";
import { CHAT_HEADERS, CHAT_PATH } from "./chat-request.js";
import { readCpuUs } from "./node-process.js";

export const CONNECTIONS = 32;

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
  /** Share of the time the bench's own event loop (load generator + test upstream) was busy. */
  clientBusy: number;
  /** CPU time the target process spent per request (user + system), µs; steadier than RPS on a
   *  machine whose cores the load generator shares. Undefined for in-process targets. */
  cpuUs?: number;
}

/**
 * `bodyFor(i)` gives connection i its request body (e.g. its own chatId). A warm-up run comes
 * first and is thrown away: a cold Node process serves a fraction of its warm rate for seconds.
 */
export async function runLoad(origin: string, bodyFor: (connection: number) => string, seconds: number, warmupSeconds: number, pid?: number): Promise<LoadResult> {
  if (warmupSeconds > 0) await fire(origin, bodyFor, warmupSeconds);
  const before = performance.eventLoopUtilization();
  const cpuBefore = pid === undefined ? undefined : await readCpuUs(pid);
  const result = await fire(origin, bodyFor, seconds);
  const cpuAfter = pid === undefined ? undefined : await readCpuUs(pid);
  const requests = result["2xx"] + result.non2xx;
  return {
    cpuUs: cpuBefore === undefined || cpuAfter === undefined || requests === 0 ? undefined : (cpuAfter - cpuBefore) / requests,
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

function fire(origin: string, bodyFor: (connection: number) => string, seconds: number): Promise<autocannon.Result> {
  let next = 0;
  return autocannon({
    url: origin + CHAT_PATH,
    method: "POST",
    headers: CHAT_HEADERS,
    body: bodyFor(0),
    connections: CONNECTIONS,
    duration: seconds,
    setupClient: (client) => client.setBody(bodyFor(next++)),
  });
}

/** One result for several slices of the same case: sums where sums mean something, the median p50
 *  and the worst p99 where percentiles cannot be merged. */
export function mergeLoads(slices: LoadResult[]): LoadResult {
  const ok = sum(slices.map((s) => s.ok));
  const seconds = sum(slices.map((s) => s.seconds));
  const answered = sum(slices.map((s) => s.answered));
  const cpu = slices.every((s) => s.cpuUs !== undefined) ? sum(slices.map((s) => s.cpuUs! * s.answered)) : undefined;
  return {
    rps: ok / seconds,
    ok,
    answered,
    seconds,
    p50: median(slices.map((s) => s.p50)),
    p99: Math.max(...slices.map((s) => s.p99)),
    failed: sum(slices.map((s) => s.failed)),
    clientBusy: sum(slices.map((s) => s.clientBusy * s.seconds)) / seconds,
    cpuUs: cpu === undefined || answered === 0 ? undefined : cpu / answered,
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
