// Requests in flight, for a shutdown that keeps its promise (docs/operations.md#signals): the
// gateway waits for them, and at the deadline cuts the ones still running through their Cancel, so
// each is settled (usage row, error event, finishReason "shutdown") before the process exits. A
// request still receiving its body is not waited for that long: it is cut once the body has had
// min(bodyTimeoutMs, 5 s) since the drain began.
import type { H3Event } from "h3";
import { Cancel } from "./cancel.js";
import { nodeResponse } from "./node.js";

/** How long cut requests get to write their usage rows and close their streams (a part of the
 *  whole shutdown's 30 s budget, docs/operations.md#signals). */
const SETTLE_AFTER_CUT_MS = 2_000;
/** The most a body still arriving is waited for once a drain began. */
const MAX_BODY_GRACE_MS = 5_000;

export class Inflight {
  closing = false;
  #cutting = false;
  #count = 0;
  readonly #cancels = new Set<Cancel>();
  /** requests whose body is still arriving */
  readonly #reading = new Set<Cancel>();
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

  /** Marks a request as receiving its body until the returned function is called. */
  reading(cancel: Cancel): () => void {
    this.#reading.add(cancel);
    return () => this.#reading.delete(cancel);
  }

  /** Refuses new work, waits up to `timeoutMs` for what runs (a body still arriving: up to
   *  min(`bodyTimeoutMs`, 5 s)), then cuts the rest and waits for it to settle. */
  async drain(timeoutMs: number, bodyTimeoutMs = MAX_BODY_GRACE_MS): Promise<void> {
    this.closing = true;
    const uploads = setTimeout(() => {
      for (const cancel of this.#reading) cancel.abort("shutdown");
    }, Math.min(bodyTimeoutMs, MAX_BODY_GRACE_MS, timeoutMs));
    uploads.unref();
    await this.#idleWithin(timeoutMs);
    clearTimeout(uploads);
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
export function trackRequest(event: H3Event, inflight: Inflight): { cancel: Cancel; untrack: () => void } {
  const cancel = new Cancel();
  const untrack = inflight.track(cancel);
  const res = nodeResponse(event);
  res?.once("close", () => res.writableFinished || cancel.abort("client_abort"));
  return { cancel, untrack };
}
