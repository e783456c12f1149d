// A channel's connection gate (docs/configuration.md#channels): at most `connections` calls at once; the rest wait
// in a bounded queue for at most `queueTimeoutMs`. A full queue or a wait past the deadline is
// refused at once (503 channel_busy), so a burst never queues without bound inside the pool.
import type { Cancel } from "../http/cancel.js";

export interface GateOptions {
  connections: number;
  maxQueue: number;
  queueTimeoutMs: number;
  /** told the queue depth whenever it changes */
  onDepth?: (depth: number) => void;
}

export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  refuse: (reason: "busy" | "cancelled") => void;
}

export class GateRefused extends Error {
  constructor(readonly reason: "busy" | "cancelled") {
    super(reason === "busy" ? "channel busy" : "cancelled while queued");
  }
}

export class ConnectionGate {
  #active = 0;
  readonly #queue: Waiter[] = [];
  readonly #opts: GateOptions;

  constructor(opts: GateOptions) {
    this.#opts = opts;
  }

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** A slot, released by calling the returned function once; rejects with GateRefused. */
  acquire(signal?: Cancel): Promise<Release> {
    if (this.#active < this.#opts.connections) {
      this.#active++;
      return Promise.resolve(this.#releaser());
    }
    if (this.#queue.length >= this.#opts.maxQueue) return Promise.reject(new GateRefused("busy"));
    return new Promise<Release>((resolve, reject) => {
      const leave = (reason: "busy" | "cancelled") => {
        const at = this.#queue.indexOf(waiter);
        if (at < 0) return;
        this.#queue.splice(at, 1);
        this.#depthChanged();
        done();
        reject(new GateRefused(reason));
      };
      const onAbort = () => leave("cancelled");
      const timer = setTimeout(() => leave("busy"), this.#opts.queueTimeoutMs);
      const done = () => {
        clearTimeout(timer);
        signal?.off("abort", onAbort);
      };
      const waiter: Waiter = {
        grant: (release) => {
          done();
          resolve(release);
        },
        refuse: leave,
      };
      signal?.once("abort", onAbort);
      this.#queue.push(waiter);
      this.#depthChanged();
    });
  }

  #releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      if (next) {
        // the slot passes straight to the next waiter: #active stays the same
        this.#depthChanged();
        next.grant(this.#releaser());
      } else {
        this.#active--;
      }
    };
  }

  #depthChanged(): void {
    this.#opts.onDepth?.(this.#queue.length);
  }
}
