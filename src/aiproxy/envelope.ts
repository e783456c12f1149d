// FastGPT's AI Proxy API speaks aiproxy's envelope (docs/fastgpt.md#the-admin-api): every answer is
// `{success, message, data}`, a failure `success: false` with its HTTP status and the message
// FastGPT throws. Handlers throw GatewayError as everywhere; this format writes it.
import { GatewayError, type ErrorFormat } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";

export const aiproxyError: ErrorFormat = (err) => ({
  status: err.status,
  body: { success: false, message: wordsOf(err) },
  headers: err.headers,
});

/** The route table's refusals of a caller (src/auth/access.ts) in aiproxy's words. */
function wordsOf(err: GatewayError): string {
  if (err.status === 401) return err.code === "missing_api_key" ? "unauthorized, no access token provided" : "unauthorized, invalid access token";
  return err.code === "admin_key_required" ? "admin key required" : err.message;
}

/** `success: true` with `data` (a list is `[]`, never null). */
export function ok(data?: unknown): Response {
  return jsonResponse(data === undefined ? { success: true, message: "" } : { success: true, message: "", data });
}

/** A failure FastGPT reads from the envelope (aiproxy answers these with HTTP 200). */
export function failed(message: string, data?: unknown): Response {
  return jsonResponse(data === undefined ? { success: false, message } : { success: false, message, data });
}

export const invalid = (message: string) => new GatewayError(400, "invalid_request", message);
export const recordNotFound = (what = "") => new GatewayError(404, "not_found", `record not found${what && `: ${what}`}`);
