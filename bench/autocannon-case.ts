// One throughput case: autocannon against one target for a fixed time, counting only 2xx answers.
import autocannon from "autocannon";
import { CHAT_HEADERS, CHAT_PATH } from "./chat-request.js";

export interface LoadResult {
  /** Successful (2xx) requests per second. */
  rps: number;
  /** Autocannon latency percentiles, ms. */
  p50: number;
  p99: number;
  /** Connection errors, timeouts and non-2xx answers. */
  failed: number;
}

/** `bodyFor(i)` gives connection i its request body (e.g. its own chatId). */
export async function runLoad(origin: string, bodyFor: (connection: number) => string, seconds: number, connections = 32): Promise<LoadResult> {
  let next = 0;
  const result = await autocannon({
    url: origin + CHAT_PATH,
    method: "POST",
    headers: CHAT_HEADERS,
    body: bodyFor(0),
    connections,
    duration: seconds,
    setupClient: (client) => client.setBody(bodyFor(next++)),
  });
  return {
    rps: result["2xx"] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: result.errors + result.non2xx,
  };
}
