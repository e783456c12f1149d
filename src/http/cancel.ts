// Stops the work of one request: the client went away, a deadline passed, or the gateway is shutting
// down; and the error each of those is to the client (docs/api.md#errors). An EventEmitter rather
// than an AbortController: undici accepts either as a request's `signal`, and a plain emitter costs
// less to make on every request than an AbortController.
import { EventEmitter } from "node:events";
import { GatewayError } from "./errors.js";

/** Why a request's work was stopped (finish reasons of docs/api.md#metering, plus the deadline). */
export type CutReason = "client_abort" | "timeout" | "shutdown";

export class Cancel extends EventEmitter {
  aborted = false;
  reason: CutReason | undefined;

  abort(reason: CutReason): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit("abort");
  }
}

export const shuttingDown = () =>
  new GatewayError(503, "shutting_down", "The gateway is shutting down; retry the request.", { type: "api_error", headers: { "Retry-After": "1" } });

/** 499: nobody reads it, but the request log, metrics and usage rows say the client left. */
export const clientClosed = () => new GatewayError(499, "client_closed", "The client closed the request.");

/** The error for work stopped by its Cancel. `what`: the model (or thing) the request was for. An
 *  upstream attempt's cut is the transport's flavour of it (upstream/errors.ts, attemptCut). */
export function cutError(cancel: Cancel, what: string): GatewayError {
  if (cancel.reason === "timeout") return new GatewayError(504, "upstream_timeout", `The model server for ${what} did not finish the answer in time.`, { type: "api_error" });
  if (cancel.reason === "shutdown") return shuttingDown();
  return clientClosed();
}

/** The finish reason of a cut answer (docs/api.md#metering). */
export function cutFinishReason(cancel: Cancel): "client_abort" | "shutdown" | "upstream_error" {
  return cancel.reason === "client_abort" ? "client_abort" : cancel.reason === "shutdown" ? "shutdown" : "upstream_error";
}
