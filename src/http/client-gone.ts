// Tells the work for a request that its client went away. An EventEmitter rather than an
// AbortController: undici accepts either as a request's `signal`, and a plain emitter costs less to
// make on every request than an AbortController and its AbortSignal.
import { EventEmitter } from "node:events";

export class ClientGone extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit("abort");
  }
}
