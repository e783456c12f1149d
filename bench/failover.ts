// Issue "Resilience": what a failed-over request costs its client. One connection sends requests
// for the model whose two channels include one failing every 5th attempt before its headers; the
// upstream names the requests it failed (by their `user` field), so the timings split into
// failed-over requests and the others.
import { request } from "undici";
import { CHAT_HEADERS, CHAT_PATH, chatBody } from "./chat-request.js";
import { percentile, timeRequests } from "./latency.js";
import { MODELS } from "./models.js";

export interface FailoverLatency {
  requests: number;
  failedOver: number;
  cleanP50: number;
  cleanP99: number;
  failedOverP50: number;
  failedOverP99: number;
}

export async function measureFailoverLatency(sluiceUrl: string, upstreamUrl: string, samples = 10_000, warmup = 50): Promise<FailoverLatency> {
  await failedUsers(upstreamUrl); // forget failures from before
  const user = (i: number) => `failover-${i}`;
  const timings = await timeRequests(
    { origin: sluiceUrl, path: CHAT_PATH, headers: CHAT_HEADERS, body: (i) => chatBody(false, { model: MODELS.flaky, user: user(i) }), stream: false },
    samples,
    warmup,
  );
  const failed = new Set(await failedUsers(upstreamUrl));
  const over = timings.filter((t) => failed.has(user(t.index))).map((t) => t.total);
  const clean = timings.filter((t) => !failed.has(user(t.index))).map((t) => t.total);
  return {
    requests: timings.length,
    failedOver: over.length,
    cleanP50: percentile(clean, 0.5),
    cleanP99: percentile(clean, 0.99),
    failedOverP50: percentile(over, 0.5),
    failedOverP99: percentile(over, 0.99),
  };
}

/** The `user` field of each request the failing channel failed since the last call. */
export async function failedUsers(upstreamUrl: string): Promise<string[]> {
  const res = await request(`${upstreamUrl}/bench/failed`);
  return (await res.body.json()) as string[];
}
