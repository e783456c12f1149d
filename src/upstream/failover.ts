// "An answer from some channel of this model" (docs/api.md#upstream-failures): the model's channels in the router's
// order, at most `maxAttempts` attempts, each before the first byte reaches the client. An attempt
// that failed for the channel's sake moves on; one the request itself caused (4xx) does not.
import type { Cancel } from "../http/cancel.js";
import { GatewayError } from "../http/errors.js";
import type { AttemptOutcome, Observer, UpstreamOutcome } from "../observability/observer.js";
import { attemptCut, mapTransportError, UpstreamError } from "./errors.js";
import type { ChannelEntry, ChannelRouter } from "./router.js";
import type { Ticket } from "./gate.js";
import type { PrefixParts } from "./prefix-index.js";
import { routerHeaders } from "./router-headers.js";
import { Attempt, type AttemptTaps } from "./attempt.js";
import type { ChannelClient } from "./types.js";

/** Outcomes that say the channel, not the request, failed: the next channel may do better. A
 *  connection lost during an attempt (`stream_cut`) is one: nothing has reached the client yet. */
const FAIL_OVER: ReadonlySet<UpstreamOutcome> = new Set(["unreachable", "timeout", "http_error", "stream_cut", "rate_limited", "auth_failed", "busy"]);
/** Outcomes the breaker counts as failures (docs/api.md#upstream-failures: connect, timeout, 502/503/504, 429;
 *  a plain 500 only when several callers meet it, see router.reportServerError). */
const BREAKER_FAILURE: ReadonlySet<UpstreamOutcome> = new Set(["unreachable", "timeout", "http_error", "stream_cut", "rate_limited"]);

export interface AttemptOptions {
  model: string;
  cancel: Cancel;
  maxAttempts: number;
  /** the request's affinity key, a digest (docs/routing.md#affinity-key), made when asked: its session's channel first */
  affinity?: () => string | undefined;
  /** the request's prefix as the channel receives it (docs/routing.md#prefix), made when asked */
  prefix?: () => PrefixParts;
  /** who is asking (a key, or a share link's client address): a plain 500 is judged by how many callers meet it */
  caller: string;
  /** the one channel to try, whatever its status or breaker (FastGPT's Aiproxy-Channel, docs/fastgpt.md#model-calls) */
  pinned?: ChannelEntry;
  /** the request's: told the route decision, and each attempt as it begins (the channel now in use,
   *  for billing and logs), waits in a queue and ends */
  taps: AttemptTaps;
  /** the caller's place in a channel's queue: its priority and app (docs/routing.md#priority-and-fairness) */
  ticket?: Ticket;
}

/** `call` (one attempt on one channel's client) tried on the model's channels until one succeeds. */
export async function withFailover<T>(
  router: ChannelRouter,
  observer: Observer,
  req: AttemptOptions,
  call: (client: ChannelClient) => Promise<T>,
): Promise<{ result: T; entry: ChannelEntry; attempts: number }> {
  const candidates = req.pinned ? [req.pinned] : router.candidates(req.model, req.affinity, req.prefix, req.taps);
  let lastError: GatewayError | undefined;
  let attempts = 0;
  for (const entry of candidates) {
    if (attempts >= req.maxAttempts) break;
    if (!req.pinned && !router.admit(entry)) {
      observer.upstreamAttempt(entry.config.name, "circuit_open");
      continue;
    }
    // a channel that is a router itself is told what it routes by (./router-headers.ts)
    const headers = entry.config.upstreamRouter ? routerHeaders(req.affinity?.(), req.ticket) : undefined;
    const attempt = new Attempt(entry, entry.client, req.ticket, ++attempts, req.taps, headers);
    req.taps.begun(attempt);
    try {
      const result = await call(attempt);
      router.report(entry, true);
      observer.upstreamAttempt(entry.config.name, "ok");
      req.taps.ended(attempt, "ok");
      return { result, entry, attempts };
    } catch (err) {
      const error = req.cancel.aborted ? attemptCut(req.cancel, req.model) : mapTransportError(err, req.model);
      const outcome: UpstreamOutcome = error instanceof UpstreamError ? error.outcome : "http_error";
      observer.upstreamFinished(entry.config.name, req.model, outcome);
      if (error instanceof UpstreamError && error.upstreamStatus === 500) router.reportServerError(entry, req.caller, retryAfterMs(error));
      else if (BREAKER_FAILURE.has(outcome)) router.report(entry, false, outcome, retryAfterMs(error));
      lastError = error;
      const next = FAIL_OVER.has(outcome) && !req.cancel.aborted && attempts < req.maxAttempts;
      const told = next ? "retried" : attemptOutcome(outcome);
      observer.upstreamAttempt(entry.config.name, told);
      req.taps.ended(attempt, told, error);
      if (!next) break;
    }
  }
  throw lastError ?? allOpen(router, candidates, req.model);
}

/** Every channel of the model has its breaker open: 503 at once, Retry-After = seconds to the next probe. */
function allOpen(router: ChannelRouter, candidates: ChannelEntry[], model: string): GatewayError {
  // every channel of the model disabled, or deleted, through FastGPT's AI Proxy API (docs/fastgpt.md#channels)
  if (candidates.length === 0) return new UpstreamError(503, "model_unavailable", `no available channel for model ${model}`, "busy");
  const next = Math.min(...candidates.map((c) => router.breaker(c).retryAt));
  const seconds = Math.max(1, Math.ceil((next - Date.now()) / 1000));
  return new UpstreamError(503, "model_unavailable", `Every model server for ${model} is failing; retry in ${seconds} s.`, "busy", {
    headers: { "Retry-After": String(seconds) },
  });
}

function attemptOutcome(outcome: UpstreamOutcome): AttemptOutcome {
  if (outcome === "timeout") return "timeout";
  if (outcome === "rate_limited") return "rate_limited";
  if (outcome === "busy") return "queue_full";
  return "error";
}

function retryAfterMs(error: GatewayError): number | undefined {
  const value = Number(error.headers["Retry-After"]);
  return Number.isFinite(value) && value > 0 ? value * 1000 : undefined;
}
