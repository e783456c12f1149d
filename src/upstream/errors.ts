// Upstream failures as gateway errors: status and wording the client can act on, with nothing of the
// upstream's URL, key or reply body in them.
import { GatewayError } from "../http/errors.js";
import type { UpstreamOutcome } from "../observability/observer.js";

export class UpstreamError extends GatewayError {
  readonly outcome: UpstreamOutcome;
  constructor(status: number, code: string, message: string, outcome: UpstreamOutcome) {
    super(status, code, message, { type: status >= 500 ? "upstream_error" : "invalid_request_error" });
    this.outcome = outcome;
  }
}

export const unreachable = (model: string) =>
  new UpstreamError(502, "upstream_unreachable", `The model server for ${model} could not be reached.`, "unreachable");

const firstByteTimeout = (model: string) =>
  new UpstreamError(504, "upstream_timeout", `The model server for ${model} did not answer in time.`, "timeout");

const idleTimeout = (model: string) =>
  new UpstreamError(504, "upstream_timeout", `The model server for ${model} stopped sending the answer.`, "timeout");

export const streamCut = (model: string) =>
  new UpstreamError(502, "upstream_stream_cut", `The model server for ${model} ended the answer before it was complete.`, "stream_cut");

export const upstreamStatus = (model: string, status: number) =>
  new UpstreamError(
    status >= 400 && status <= 599 ? status : 502,
    "upstream_error",
    `The model server for ${model} answered with HTTP ${status}.`,
    "http_error",
  );

export const badUpstreamReply = (model: string) =>
  new UpstreamError(502, "upstream_bad_response", `The model server for ${model} sent an answer that is not valid.`, "http_error");

/** undici's error codes mapped to what the client sees. */
export function mapTransportError(err: unknown, model: string): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = (err as { code?: string })?.code;
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT") return firstByteTimeout(model);
  if (code === "UND_ERR_BODY_TIMEOUT") return idleTimeout(model);
  if (code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "UND_ERR_RESPONSE_STATUS_CODE") return streamCut(model);
  return unreachable(model);
}
