// "An answer from some channel of this model" (CONTRACTS §9): the model's channels in the router's
// order, at most `maxAttempts` attempts, each before the first byte reaches the client. An attempt
// that failed for the channel's sake moves on; one the request itself caused (4xx) does not.
import type { Cancel } from "../http/cancel.js";
import { GatewayError } from "../http/errors.js";
import type { Observer, UpstreamOutcome } from "../observability/observer.js";
import { UpstreamError, mapTransportError, upstreamTimeout } from "./errors.js";
import type { ChannelEntry, ChannelRouter } from "./router.js";
import type { UpstreamAnswer } from "./types.js";

/** Outcomes that say the channel, not the request, failed: the next channel may do better. */
const FAIL_OVER: ReadonlySet<UpstreamOutcome> = new Set(["unreachable", "timeout", "http_error", "rate_limited", "auth_failed", "busy"]);
/** Outcomes that mark the channel down until it answers again. */
const MARK_DOWN: ReadonlySet<UpstreamOutcome> = new Set(["unreachable", "timeout", "http_error"]);

export interface AnswerRequest {
  model: string;
  body: Record<string, unknown>;
  stream: boolean;
  cancel: Cancel;
  maxAttempts: number;
  /** called as each attempt starts: the channel now in use (for billing and logs) */
  onAttempt: (entry: ChannelEntry) => void;
}

export interface Answer {
  answer: UpstreamAnswer;
  entry: ChannelEntry;
}

export async function requestAnswer(router: ChannelRouter, observer: Observer, req: AnswerRequest): Promise<Answer> {
  const candidates = router.candidates(req.model).slice(0, Math.max(1, req.maxAttempts));
  let lastError: GatewayError | undefined;
  for (const entry of candidates) {
    req.onAttempt(entry);
    try {
      const answer = await entry.client.send({ body: req.body, stream: req.stream, signal: req.cancel });
      router.report(entry, true);
      return { answer, entry };
    } catch (err) {
      const error = req.cancel.aborted ? cutError(req.cancel, req.model) : mapTransportError(err, req.model);
      const outcome: UpstreamOutcome = error instanceof UpstreamError ? error.outcome : "http_error";
      observer.upstreamFinished(entry.config.name, req.model, outcome);
      if (MARK_DOWN.has(outcome)) router.report(entry, false);
      lastError = error;
      if (!FAIL_OVER.has(outcome) || req.cancel.aborted) break;
    }
  }
  throw lastError ?? new GatewayError(404, "model_not_found", `No channel serves ${req.model}.`);
}

/** The error for work stopped by its Cancel: the client left, the deadline passed, or shutdown. */
export function cutError(cancel: Cancel, model: string): GatewayError {
  if (cancel.reason === "timeout") return upstreamTimeout(model, "did not finish the answer in time");
  if (cancel.reason === "shutdown") return shuttingDown();
  return new UpstreamError(499, "client_closed", "The client closed the request.", "aborted");
}

export const shuttingDown = () =>
  new UpstreamError(503, "shutting_down", "The gateway is shutting down; retry the request.", "shutdown", { headers: { "Retry-After": "1" } });
