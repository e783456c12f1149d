// Requests in flight, for a shutdown that keeps its promise (CONTRACTS §7 `shutdownTimeoutMs`): the
// gateway waits for them, and at the deadline cuts the ones still running through their Cancel, so
// each is settled (usage row, error event, finishReason "shutdown") before the process exits.
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import { Cancel } from "./cancel.js";

/** How long cut requests get to write their usage rows and close their streams. */
const SETTLE_AFTER_CUT_MS = 5_000;

export class Inflight {
  closing = false;
  #cutting = false;
  #count = 0;
  readonly #cancels = new Set<Cancel>();
  #idle: Array<() => void> = [];

  get count(): number {
    return this.#count;
  }

  enter(): void {
    this.#count++;
  }

  leave(): void {
    this.#count = Math.max(0, this.#count - 1);
    if (this.#count > 0) return;
    const waiters = this.#idle;
    this.#idle = [];
    for (const resolve of waiters) resolve();
  }

  /** Registers a request's Cancel until the returned function is called. */
  track(cancel: Cancel): () => void {
    this.#cancels.add(cancel);
    if (this.closing && this.#cutting) cancel.abort("shutdown");
    return () => this.#cancels.delete(cancel);
  }

  /** Refuses new work, waits up to `timeoutMs` for what runs, then cuts the rest and waits for it to settle. */
  async drain(timeoutMs: number): Promise<void> {
    this.closing = true;
    await this.#idleWithin(timeoutMs);
    this.#cutting = true;
    for (const cancel of this.#cancels) cancel.abort("shutdown");
    await this.#idleWithin(SETTLE_AFTER_CUT_MS);
  }

  #idleWithin(ms: number): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#idle.push(done);
    });
  }
}

/** A request's Cancel, tracked for shutdown and aborted when its client leaves before the answer
 *  is written; `untrack` when the request's work is done. */
export function trackRequest(event: H3Event, inflight: Inflight): { cancel: Cancel; untrack: () => void; nodeRes: ServerResponse | undefined } {
  const cancel = new Cancel();
  const untrack = inflight.track(cancel);
  const nodeRes = event.runtime?.node?.res as ServerResponse | undefined; // http/1.1: the server speaks no http2
  nodeRes?.once("close", () => nodeRes.writableFinished || cancel.abort("client_abort"));
  return { cancel, untrack, nodeRes };
}
