// The one table of Anthropic-shaped errors (docs/claude-code.md#errors): every GatewayError of the
// pipeline becomes `{type: "error", error: {type, message}}` with Anthropic's status and type, so
// the SDK raises its typed errors and Claude Code retries what Anthropic's API would have it retry.
import type { GatewayError } from "../../http/errors.js";
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
  error: { type: AnthropicErrorType; message: string };
}

/** What a prompt over the model's context carries (the chat limits' `context_length_exceeded`). */
export interface PromptSize {
  promptTokens: number;
  maxContext: number;
}

/** The status, body and headers of `err` in Anthropic's shape. */
export function anthropicError(err: GatewayError): DialectError {
  const { status, type } = classify(err);
  return { status, body: errorBody(type, messageOf(err)), headers: { ...err.headers } };
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
 *  `prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)`: the numbers must be there. */
function messageOf(err: GatewayError): string {
  if (err.code !== "context_length_exceeded") return err.message;
  const size = promptSize(err);
  return size ? `prompt is too long: ${size.promptTokens} tokens > ${size.maxContext} maximum` : `prompt is too long: ${err.message}`;
}

/** The numbers of a context_length_exceeded: its own fields when the pipeline set them, else read
 *  from the chat limits' message ("… take [more than] N tokens; model X allows M in all."), where a
 *  prompt may take at most M - 1 tokens (one is left for the answer). */
export function promptSize(err: GatewayError): PromptSize | undefined {
  const { promptTokens, maxContext } = err as Partial<PromptSize>;
  if (Number.isInteger(promptTokens) && Number.isInteger(maxContext)) return { promptTokens: promptTokens!, maxContext: maxContext! };
  const m = /take (more than )?(\d+) tokens; .* allows (\d+) in all/.exec(err.message);
  if (!m) return undefined;
  const maxPrompt = Number(m[3]) - 1;
  return { promptTokens: Math.max(Number(m[2]) + (m[1] ? 1 : 0), maxPrompt + 1), maxContext: maxPrompt };
}
