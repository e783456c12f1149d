// Stops the work of one request: the client went away, a deadline passed, or the gateway is shutting
// down. An EventEmitter rather than an AbortController: undici accepts either as a request's
// `signal`, and a plain emitter costs less to make on every request than an AbortController.
import { EventEmitter } from "node:events";

/** Why a request's work was stopped (CONTRACTS §10 finish reasons, plus the deadline). */
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
