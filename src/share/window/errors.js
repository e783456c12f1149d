// What the window says when something fails. The gateway's error code decides, so the words are the
// window's own, in the user's language, and name no internal id or configured number; the wait comes
// from the Retry-After header. Only the operator's own refusal is shown as the gateway sent it.

/** A refused or failed request: the HTTP status and the OpenAI-shaped error body's fields. */
export class RequestFailure extends Error {
  constructor(status, code, message, retryAfter = null, midStream = false) {
    super(message || code || "HTTP " + status);
    this.status = status;
    this.code = code;
    this.serverMessage = message;
    /** whole seconds to wait, from Retry-After; null when the header was absent */
    this.retryAfter = retryAfter;
    /** the error arrived as an event inside an answer already streaming */
    this.midStream = midStream;
  }
}

/** The answer's stream ended without its end mark and without an error event. */
export class AnswerInterrupted extends Error {}

export async function failureOf(res) {
  const data = await res.json().catch(() => null);
  const error = (data && data.error) || {};
  return new RequestFailure(res.status, error.code || "", error.message || "", retryAfterSeconds(res.headers.get("retry-after")));
}

function retryAfterSeconds(value) {
  const seconds = Number(value);
  // the HTTP-date form is not used by the gateway; anything else means "no wait given"
  return value && Number.isFinite(seconds) && seconds >= 0 ? Math.max(1, Math.ceil(seconds)) : null;
}

const withWait = (t, err, timed, untimed) => (err.retryAfter ? t(timed, { s: err.retryAfter }) : t(untimed));

/** code → the window's words */
const BY_CODE = {
  share_link_not_found: (t) => t("linkNotFound"),
  share_link_expired: (t) => t("linkExpired"),
  rate_limit_exceeded: (t, err) => withWait(t, err, "tooManyIn", "tooMany"),
  insufficient_quota: (t) => t("allowanceUsed"),
  upstream_rate_limited: (t, err) => withWait(t, err, "busyIn", "busy"),
  model_unavailable: (t, err) => withWait(t, err, "busyIn", "busy"),
  channel_busy: (t, err) => withWait(t, err, "busyIn", "busy"),
  shutting_down: (t, err) => withWait(t, err, "busyIn", "busy"),
  share_auth_unavailable: (t) => t("identityUnavailable"),
  // the operator's identity server refused: its own words are what the user needs
  share_auth_rejected: (t, err) => err.serverMessage || t("identityUnavailable"),
  chat_not_owned: (t) => t("chatNotOwned"),
  chat_not_found: (t) => t("chatNotFound"),
  context_length_exceeded: (t) => t("tooLong"),
  request_too_large: (t) => t("tooLong"),
  upstream_error: (t) => t("noAnswer"),
  upstream_timeout: (t) => t("noAnswer"),
  upstream_auth_failed: (t) => t("noAnswer"),
};

/** The sentence shown for `err` (a RequestFailure, AnswerInterrupted, or fetch's network error). */
export function describeFailure(err, t) {
  if (err instanceof AnswerInterrupted) return t("interrupted");
  if (!(err instanceof RequestFailure)) return t("offline");
  if (err.midStream && err.code !== "shutting_down") return t("interrupted");
  const byCode = BY_CODE[err.code];
  if (byCode) return byCode(t, err);
  if (err.status === 429) return withWait(t, err, "tooManyIn", "tooMany");
  if (err.status >= 500 || !err.serverMessage) return t("failed", { status: err.status });
  return err.serverMessage;
}
