// The one table of Anthropic-shaped errors (docs/claude-code.md#errors): every GatewayError of the
// pipeline becomes `{type: "error", error: {type, message}}` with Anthropic's status and type, so
// the SDK raises its typed errors and Claude Code retries what Anthropic's API would have it retry.
import { ContextTooLong } from "../../chat/limits.js";
import { GatewayError } from "../../http/errors.js";
import type { DialectError } from "./types.js";

export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

export interface AnthropicErrorBody {
  type: "error";
  error: { type: AnthropicErrorType; message: string; details?: Record<string, unknown> };
}

/** A refusal a client acts on by its `error.details` (`error_code`, …): the message threads' two. */
export class DetailedError extends GatewayError {
  constructor(
    status: number,
    code: string,
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(status, code, message);
  }
}

/** A `continue` naming no live message of the key's threads: the SDK sends the whole history again
 *  under a new thread (docs/claude-code.md#message-threads). */
export const threadNotFound = (id: string) =>
  new DetailedError(404, "thread_not_found", `thread.previous_message_id: no thread of this key holds ${JSON.stringify(id)} (unknown, expired, or another key's)`, {
    error_code: "thread_not_found",
  });

/** A thread Sluice cannot serve: the SDK goes on without threads (its tool runner at once). */
export const threadUnsupported = (unsupported: string[], why: string) =>
  new DetailedError(400, "thread_unsupported_request", `thread: ${why}; send the request without \`thread\``, {
    error_code: "thread_unsupported_request",
    unsupported,
  });

/** The status, body and headers of `err` in Anthropic's shape. */
export function anthropicError(err: GatewayError): DialectError {
  const { status, type } = classify(err);
  const headers: Record<string, string> = { ...err.headers };
  // a wrong key and a spent budget (or a period's, until it resets) stay so: Anthropic's clients
  // retry every 429 (and Claude Code every 401, for ten tries) unless told not to
  if (status === 401 || err.code === "insufficient_quota" || err.code === "period_budget_exhausted") headers["x-should-retry"] = "false";
  const body = errorBody(type, messageOf(err));
  if (err instanceof DetailedError) body.error.details = err.details;
  return { status, body, headers };
}

/** The `event: error` that ends a stream which failed after its first byte. */
export function errorEvent(err: GatewayError): string {
  return `event: error\ndata: ${JSON.stringify(errorBody(classify(err).type, messageOf(err)))}\n\n`;
}

export function errorBody(type: AnthropicErrorType, message: string): AnthropicErrorBody {
  return { type: "error", error: { type, message } };
}

function classify(err: GatewayError): { status: number; type: AnthropicErrorType } {
  const status = err.status;
  if (status === 401) return { status, type: "authentication_error" };
  if (status === 403) return { status, type: "permission_error" };
  if (status === 404) return { status, type: "not_found_error" };
  if (status === 413) return { status, type: "request_too_large" };
  // QPM, budgets and an upstream's 429 alike: the client may retry later
  if (status === 429) return { status, type: "rate_limit_error" };
  if (status === 503) return { status, type: "overloaded_error" };
  if (status >= 500) return { status, type: "api_error" };
  if (status >= 400) return { status, type: "invalid_request_error" };
  return { status: 500, type: "api_error" };
}

/** Claude Code compacts its history on a 400 whose message matches
 *  `prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)`: the numbers must be there. The chat
 *  limits' refusal carries them: the prompt's tokens (at least one more than the maximum when the
 *  limits stopped counting there) and the most a prompt may take (`maxContext` - 1). */
function messageOf(err: GatewayError): string {
  if (!(err instanceof ContextTooLong)) return err.message;
  return `prompt is too long: ${err.promptTokens ?? err.maxPrompt + 1} tokens > ${err.maxPrompt} maximum`;
}
