// Latency seen by a single sequential client: total time per request and, for streams, the time
// to the first `data:` bytes (TTFT), timed with hrtime on one kept-alive connection.
import { Pool } from "undici";
import type { LoadSpec } from "./autocannon-case.js";

export interface LatencyResult {
  /** Whole request, ms. */
  p50: number;
  p99: number;
  /** Streams only: time to the first `data:` bytes, ms. */
  ttftP50?: number;
  ttftP99?: number;
}

export interface Timing {
  /** the request's number, warm-up requests included */
  index: number;
  total: number;
  first?: number;
}

/** What one connection sends: `body(i)` is the body of request i. */
export type Sequential = Omit<LoadSpec, "connections"> & { stream: boolean };

export async function measureLatency(target: Sequential, samples = 500, warmup = 50): Promise<LatencyResult> {
  const timings = await timeRequests(target, samples, warmup);
  const totals = timings.map((t) => t.total);
  const firsts = timings.flatMap((t) => (t.first === undefined ? [] : [t.first]));
  return {
    p50: percentile(totals, 0.5),
    p99: percentile(totals, 0.99),
    ...(target.stream ? { ttftP50: percentile(firsts, 0.5), ttftP99: percentile(firsts, 0.99) } : {}),
  };
}

/** `warmup + samples` requests one after the other; the timings of the samples. */
export async function timeRequests(target: Sequential, samples: number, warmup: number): Promise<Timing[]> {
  const pool = new Pool(target.origin, { connections: 1 });
  const timings: Timing[] = [];
  try {
    for (let i = 0; i < warmup + samples; i++) {
      const timing = await timeOne(pool, target, i);
      if (i >= warmup) timings.push(timing);
    }
  } finally {
    await pool.close();
  }
  return timings;
}

async function timeOne(pool: Pool, target: Sequential, index: number): Promise<Timing> {
  const start = process.hrtime.bigint();
  const res = await pool.request({ method: "POST", path: target.path, headers: target.headers, body: target.body(index) });
  if (res.statusCode !== 200) throw new Error(`answered ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`);
  let first: number | undefined;
  for await (const chunk of res.body) {
    if (target.stream && first === undefined && String(chunk).includes("data:")) first = msSince(start);
  }
  return { index, total: msSince(start), first };
}

function msSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}
