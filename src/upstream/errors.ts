// Upstream failures as gateway errors (docs/api.md#upstream-failures): status and wording the client can act on, with
// nothing of the upstream's URL, key or reply body in them — except a 4xx's own message, which
// tells the client what was wrong with its request (redacted first).
import { cutError, type Cancel } from "../http/cancel.js";
import { GatewayError } from "../http/errors.js";
import type { UpstreamOutcome } from "../observability/observer.js";

/** A GatewayError that says how the upstream attempt ended (failover and the breaker read it). */
export class UpstreamError extends GatewayError {
  readonly outcome: UpstreamOutcome;
  /** what the operator's log gets: the upstream's own words (redacted), never shown to the client */
  readonly detail: string | undefined;
  /** the upstream's own HTTP status, when it answered one */
  readonly upstreamStatus: number | undefined;
  constructor(
    status: number,
    code: string,
    message: string,
    outcome: UpstreamOutcome,
    opts: { headers?: Record<string, string>; detail?: string; upstreamStatus?: number; cause?: unknown } = {},
  ) {
    const type = status === 429 ? "rate_limit_error" : status >= 500 ? "api_error" : "invalid_request_error";
    super(status, code, message, { type, headers: opts.headers, cause: opts.cause });
    this.outcome = outcome;
    this.detail = opts.detail;
    this.upstreamStatus = opts.upstreamStatus;
  }
}

/** The error for an attempt (or an answer) stopped by the request's Cancel, with its outcome. */
export function attemptCut(cancel: Cancel, model: string): UpstreamError {
  const err = cutError(cancel, model);
  const outcome = cancel.reason === "timeout" ? "timeout" : cancel.reason === "shutdown" ? "shutdown" : "aborted";
  return new UpstreamError(err.status, err.code, err.message, outcome, { headers: err.headers });
}

// `cause`: the transport's error it stands for (mapTransportError)
export const unreachable = (model: string, cause?: unknown) =>
  new UpstreamError(502, "upstream_error", `The model server for ${model} could not be reached.`, "unreachable", { cause });

export const upstreamTimeout = (model: string, what = "did not answer in time", cause?: unknown) =>
  new UpstreamError(504, "upstream_timeout", `The model server for ${model} ${what}.`, "timeout", { cause });

export const streamCut = (model: string, cause?: unknown) =>
  new UpstreamError(502, "upstream_error", `The model server for ${model} ended the answer before it was complete.`, "stream_cut", { cause });

export const badUpstreamReply = (model: string, cause?: unknown) =>
  new UpstreamError(502, "upstream_error", `The model server for ${model} sent an answer that is not valid.`, "http_error", { cause });

export const upstreamReportedError = (model: string) =>
  new UpstreamError(502, "upstream_error", `The model server for ${model} reported an error during the answer.`, "http_error");

export const answerTooLarge = (model: string, limit: number) =>
  new UpstreamError(502, "upstream_error", `The model server for ${model} sent an answer larger than ${limit} bytes.`, "too_large");

/** docs/api.md#streams: one event of a stream over the bound */
export const eventTooLarge = (model: string, limit: number) =>
  new UpstreamError(502, "upstream_error", `The model server for ${model} sent a stream event larger than ${limit} bytes.`, "too_large");

export const channelBusy = (model: string) =>
  new UpstreamError(503, "channel_busy", `The model server for ${model} is busy: too many requests are waiting. Retry shortly.`, "busy", {
    headers: { "Retry-After": "1" },
  });

/** An upstream's non-2xx answer, by the table of docs/api.md#upstream-failures. `message`: the upstream's, redacted. */
export function upstreamStatus(model: string, status: number, message: string | undefined, retryAfter: string | undefined): UpstreamError {
  const detail = message;
  if (status === 429) {
    const headers: Record<string, string> = retryAfter && /^\d{1,6}$/.test(retryAfter.trim()) ? { "Retry-After": retryAfter.trim() } : {};
    return new UpstreamError(429, "upstream_rate_limited", `The model server for ${model} is rate limiting requests; retry later.`, "rate_limited", { headers, detail, upstreamStatus: status });
  }
  if (status === 401 || status === 403) {
    // the channel's key is wrong, not the client's: the client must not think its own key failed
    return new UpstreamError(502, "upstream_auth_failed", `The gateway's credentials for the model server of ${model} were refused.`, "auth_failed", { detail, upstreamStatus: status });
  }
  if (status === 400 || status === 404 || status === 413 || status === 422) {
    const said = message ? `: ${message}` : ".";
    return new UpstreamError(400, "upstream_rejected", `The model server for ${model} rejected the request${said}`, "rejected", { detail, upstreamStatus: status });
  }
  return new UpstreamError(502, "upstream_error", `The model server for ${model} answered with HTTP ${status}.`, "http_error", { detail, upstreamStatus: status });
}

/** undici's transport errors; anything else is the gateway's own fault and never blames the channel. */
export function mapTransportError(err: unknown, model: string): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: string })?.code;
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT") return upstreamTimeout(model, undefined, err);
  if (code === "UND_ERR_BODY_TIMEOUT") return upstreamTimeout(model, "stopped sending the answer", err);
  if (code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "EPIPE" || code === "UND_ERR_RESPONSE_STATUS_CODE") return streamCut(model, err);
  // undici's HTTP parser: the connection ended mid-answer ("Invalid EOF state", which carries no
  // code), or what came is not HTTP — the channel's fault either way, never the gateway's
  if ((err as { name?: unknown })?.name === "HTTPParserError") return /EOF/.test(String((err as Error).message)) ? streamCut(model, err) : badUpstreamReply(model, err);
  if (code && (code.startsWith("UND_ERR") || code.startsWith("E"))) return unreachable(model, err);
  // the gateway's own fault: its request line carries the error's stack (docs/architecture.md#errors)
  return new GatewayError(500, "internal_error", "Internal server error", { type: "server_error", cause: err });
}

const MAX_DETAIL_CHARS = 300;

/** `text` with the channel's key, bearer tokens and anything key-like replaced by `[redacted]`. */
export function redactSecrets(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 6) out = out.split(secret).join("[redacted]");
  return out.replace(/\b(Bearer\s+)[^\s"'\\]+/gi, "$1[redacted]").replace(/\b(sk|pk|rk|key)[-_][A-Za-z0-9_-]{8,}/g, "[redacted]");
}

/** The message of an upstream's error body, cut short, with the channel key and anything key-like removed. */
export function redactUpstreamMessage(body: string, secrets: string[]): string | undefined {
  let message: unknown = body;
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    message = typeof parsed.error === "string" ? parsed.error : (parsed.error?.message ?? parsed.message ?? parsed.detail ?? body);
  } catch {
    // a plain-text error body is its own message
  }
  if (typeof message !== "string") message = JSON.stringify(message);
  const text = redactSecrets((message as string).slice(0, MAX_DETAIL_CHARS * 4), secrets)
    .replace(/https?:\/\/\S+/g, "[url]")
    .replace(/\s+/g, " ")
    .trim();
  return text ? text.slice(0, MAX_DETAIL_CHARS) : undefined;
}
