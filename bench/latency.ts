// Latency seen by a single sequential client: total time per request and, for streams, the time
// to the first `data:` bytes (TTFT), timed with hrtime on one kept-alive connection.
import { Pool } from "undici";
import { CHAT_HEADERS, CHAT_PATH } from "./chat-request.js";

export interface LatencyResult {
  /** Whole request, ms. */
  p50: number;
  p99: number;
  /** Streams only: time to the first `data:` bytes, ms. */
  ttftP50: number | null;
}

export async function measureLatency(origin: string, body: string, stream: boolean, samples = 500, warmup = 50): Promise<LatencyResult> {
  const pool = new Pool(origin, { connections: 1 });
  const totals: number[] = [];
  const firsts: number[] = [];
  try {
    for (let i = 0; i < warmup + samples; i++) {
      const timing = await timeOne(pool, body, stream);
      if (i < warmup) continue;
      totals.push(timing.total);
      if (timing.first !== null) firsts.push(timing.first);
    }
  } finally {
    await pool.close();
  }
  return { p50: percentile(totals, 0.5), p99: percentile(totals, 0.99), ttftP50: stream ? percentile(firsts, 0.5) : null };
}

async function timeOne(pool: Pool, body: string, stream: boolean): Promise<{ total: number; first: number | null }> {
  const start = process.hrtime.bigint();
  const res = await pool.request({ method: "POST", path: CHAT_PATH, headers: CHAT_HEADERS, body });
  if (res.statusCode !== 200) throw new Error(`answered ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`);
  let first: number | null = null;
  for await (const chunk of res.body) {
    if (stream && first === null && String(chunk).includes("data:")) first = msSince(start);
  }
  return { total: msSince(start), first };
}

function msSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}
