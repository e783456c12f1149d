// One throughput case: autocannon against one target for a fixed time, counting only 2xx answers.
import autocannon from "autocannon";
import { performance } from "node:perf_hooks";
import { CHAT_HEADERS, CHAT_PATH } from "./chat-request.js";
import { readCpuUs } from "./node-process.js";

export const CONNECTIONS = 32;

export interface LoadResult {
  /** Successful (2xx) requests per second. */
  rps: number;
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
