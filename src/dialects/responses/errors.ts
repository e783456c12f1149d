// Errors of the Responses dialect: the OpenAI shape of the chat path (docs/api.md#errors), plus those
// the store adds. Over `maxContext` stays a 400 `context_length_exceeded`: Codex tells its user
// the context window is full on that code, and does not retry.
import { badRequest, GatewayError } from "../../http/errors.js";

/** GET/DELETE of a response that is missing, expired, of another app, or was made with `store: false`. */
export const responseNotFound = () =>
  new GatewayError(404, "response_not_found", "No such response: it may have expired, been deleted, or been made with store: false.");

/** `previous_response_id` that names no stored response of this app (the API answers 400 here). */
export const previousResponseNotFound = () =>
  badRequest(
    "previous_response_not_found",
    "previous_response_id: no such response (it may have expired, been deleted, or been made with store: false).",
    "previous_response_id",
  );

/** `store: true` for a conversation larger than one kept response may be (`responses.maxBytes`). */
export const storedResponseTooLarge = (bytes: number, max: number) =>
  badRequest(
    "stored_response_too_large",
    `store: this conversation takes ${bytes} bytes and a stored response at most ${max}; send store: false with the whole conversation, or start a new one.`,
    "store",
  );

/** `store: true` while the app's stored responses are at their quota (`responses.maxRowsPerApp`, `maxBytesPerApp`). */
export const storeQuotaExceeded = (appId: string, kept: { rows: number; bytes: number }, max: { maxRowsPerApp: number; maxBytesPerApp: number }) =>
  badRequest(
    "store_quota_exceeded",
    `store: app ${appId} keeps ${kept.rows} responses (${kept.bytes} bytes), its quota is ${max.maxRowsPerApp} (${max.maxBytesPerApp} bytes); delete some, or send store: false.`,
    "store",
  );
