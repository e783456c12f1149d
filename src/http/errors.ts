// The one error type of the gateway (its upstream flavour is the transport's, upstream/errors.ts),
// and the one place it becomes a response: OpenAI's error shape by default, another dialect's through its own formatter
// (docs/api.md#errors). Handlers throw; the route wrapper formats. Messages never carry keys,
// tokens or upstream URLs.

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "rate_limit_error"
  | "insufficient_quota"
  | "upstream_error"
  | "api_error"
  | "server_error";

export interface OpenAIErrorBody {
  error: { message: string; type: ErrorType; code: string; param: string | null };
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string;
  readonly param: string | null;
  /** extra response headers, e.g. Retry-After */
  readonly headers: Record<string, string>;

  /**
   * `cause`: the error this one stands for (ES2022's Error cause: an upstream's transport error, the
   * store's or Redis's), for whoever reads the error in the process. Never in the answer, which
   * `toBody` and the dialects' formats make from the fields above; the request log prints it only
   * under a 500 `internal_error`, by its name, code, message and stack (docs/architecture.md#errors).
   */
  constructor(
    status: number,
    code: string,
    message: string,
    opts: { type?: ErrorType; param?: string | null; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    // no `cause` property at all when there is none
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "GatewayError";
    this.status = status;
    this.code = code;
    this.type = opts.type ?? defaultType(status);
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
  }

  toBody(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, code: this.code, param: this.param } };
  }
}

function defaultType(status: number): ErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "upstream_error";
  return "invalid_request_error";
}

/** Shorthands for the errors thrown in many places. */
export const badRequest = (code: string, message: string, param: string | null = null) =>
  new GatewayError(400, code, message, { param });
export const notFound = (code: string, message: string) => new GatewayError(404, code, message);

/** 429 rate_limit_exceeded, Retry-After in whole seconds (at least one), which `message` is told. */
export function rateLimited(retryAfterMs: number, message: (seconds: number) => string): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new GatewayError(429, "rate_limit_exceeded", message(seconds), { headers: { "Retry-After": String(seconds) } });
}

/** Any thrown value as a GatewayError; unknown errors become a 500 whose message reveals nothing. */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const status = (err as { status?: unknown })?.status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    // h3's own errors (malformed URL, 405 …): keep the status, use h3's message
    const message = (err as Error).message || "Bad request";
    return new GatewayError(status, status === 404 ? "not_found" : "invalid_request", message, { cause: err });
  }
  return new GatewayError(500, "internal_error", "Internal server error", { type: "server_error", cause: err });
}

/** How one dialect writes an error: status, body and headers (Retry-After, …). */
export interface ErrorReply {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

export type ErrorFormat = (err: GatewayError) => ErrorReply;

/** OpenAI's shape, the default of every route (docs/api.md#errors). */
export const openAIError: ErrorFormat = (err) => ({ status: err.status, body: err.toBody(), headers: err.headers });

export function errorResponse(err: GatewayError, extraHeaders?: Record<string, string>, format: ErrorFormat = openAIError): Response {
  const reply = format(err);
  return new Response(JSON.stringify(reply.body), {
    status: reply.status,
    headers: { "content-type": "application/json; charset=utf-8", ...reply.headers, ...extraHeaders },
  });
}
