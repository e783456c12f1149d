// FastGPT's AI Proxy API speaks aiproxy's envelope (docs/fastgpt.md#the-admin-api): every answer is
// `{success, message, data}`, a failure `success: false` with its HTTP status and the message
// FastGPT throws. Handlers throw GatewayError as everywhere; this format writes it.
import type { H3Event } from "h3";
import type { KeyIdentity, Keyring } from "../auth/keys.js";
import { GatewayError, type ErrorFormat } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";

export const aiproxyError: ErrorFormat = (err) => ({
  status: err.status,
  body: { success: false, message: err.message },
  headers: err.headers,
});

/** `success: true` with `data` (a list is `[]`, never null). */
export function ok(data?: unknown): Response {
  return jsonResponse(data === undefined ? { success: true, message: "" } : { success: true, message: "", data });
}

/** A failure FastGPT reads from the envelope (aiproxy answers these with HTTP 200). */
export function failed(message: string, data?: unknown): Response {
  return jsonResponse(data === undefined ? { success: false, message } : { success: false, message, data });
}

/** The admin key of the request, in aiproxy's words when there is none. */
export function requireAdminKey(keyring: Keyring, event: H3Event): KeyIdentity {
  let key: KeyIdentity;
  try {
    key = keyring.authenticate(event.req.headers.get("authorization"));
  } catch (err) {
    const missing = err instanceof GatewayError && err.code === "missing_api_key";
    throw new GatewayError(401, missing ? "missing_api_key" : "invalid_api_key", missing ? "unauthorized, no access token provided" : "unauthorized, invalid access token");
  }
  if (key.kind !== "admin") throw new GatewayError(403, "admin_key_required", "admin key required");
  return key;
}

export const invalid = (message: string) => new GatewayError(400, "invalid_request", message);
export const recordNotFound = (what = "") => new GatewayError(404, "not_found", `record not found${what && `: ${what}`}`);
