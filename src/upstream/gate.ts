// A channel's gate (docs/routing.md#priority-and-fairness): at most `connections` calls at once; the
// rest wait in the gateway's queue for at most `queueTimeoutMs`, and a freed slot goes to the waiter
// with the highest effective priority (its priority plus one for each `agingMs` it has waited, so
// none starves), among those to the app served least recently (round robin across apps), inside an
// app to the oldest (FIFO). A full queue or a wait past the deadline is refused at once
// (503 channel_busy, docs/api.md#upstream-failures), so a burst never queues without bound.
import { LRUCache } from "lru-cache";
import type { Cancel } from "../http/cancel.js";

export interface GateOptions {
  connections: number;
  maxQueue: number;
  queueTimeoutMs: number;
  /** a waiter gains one priority per this many ms waited (default 10 000) */
  agingMs?: number;
  now?: () => number;
  /** told the queue depth whenever it changes */
  onDepth?: (depth: number) => void;
  /** told each granted call's wait (0 when a slot was free) and its ticket's priority */
  onWait?: (waitedMs: number, priority: number) => void;
}

/** Who waits: the caller's configured priority and app (absent: priority 0, one shared app). */
export interface Ticket {
  priority?: number;
  app?: string;
}

export type Release = () => void;

interface Waiter {
  priority: number;
  app: string;
  since: number;
  grant: (release: Release) => void;
}

export class GateRefused extends Error {
  constructor(readonly reason: "busy" | "cancelled") {
    super(reason === "busy" ? "channel busy" : "cancelled while queued");
  }
}

/** apps remembered for round robin: configured ids, so few; bounded all the same */
const MAX_APPS = 10_000;

export class ConnectionGate {
  #active = 0;
  #grants = 0;
  readonly #queue: Waiter[] = [];
  /** app → the grant count when it was last served */
  readonly #served = new LRUCache<string, number>({ max: MAX_APPS });
  readonly #opts: GateOptions;
  readonly #now: () => number;
  readonly #agingMs: number;

  constructor(opts: GateOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#agingMs = opts.agingMs ?? 10_000;
  }

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** A call sent now would hold a slot at once, without queueing. */
  hasRoom(): boolean {
    return this.#active < this.#opts.connections;
  }

  /** A slot, released by calling the returned function once; rejects with GateRefused. */
  acquire(signal?: Cancel, ticket: Ticket = {}): Promise<Release> {
    const priority = ticket.priority ?? 0;
    const app = ticket.app ?? "";
    if (this.#active < this.#opts.connections) {
      this.#active++;
      this.#served.set(app, ++this.#grants);
      this.#opts.onWait?.(0, priority);
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
        priority,
        app,
        since: this.#now(),
        grant: (release) => {
          done();
          this.#opts.onWait?.(this.#now() - waiter.since, priority);
          resolve(release);
        },
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
      const next = this.#next();
      if (next) {
        // the slot passes straight to the next waiter: #active stays the same
        this.#depthChanged();
        next.grant(this.#releaser());
      } else {
        this.#active--;
      }
    };
  }

  /** Takes the waiter to serve next out of the queue: highest effective priority, then the app
   *  served least recently, then the oldest (the queue is in arrival order). */
  #next(): Waiter | undefined {
    if (this.#queue.length === 0) return undefined;
    const now = this.#now();
    let best = -1;
    let bestPriority = 0;
    let bestServed = 0;
    for (let i = 0; i < this.#queue.length; i++) {
      const w = this.#queue[i]!;
      const effective = w.priority + Math.floor((now - w.since) / this.#agingMs);
      const served = this.#served.peek(w.app) ?? 0;
      if (best < 0 || effective > bestPriority || (effective === bestPriority && served < bestServed)) {
        best = i;
        bestPriority = effective;
        bestServed = served;
      }
    }
    const [next] = this.#queue.splice(best, 1);
    this.#served.set(next!.app, ++this.#grants);
    return next;
  }

  #depthChanged(): void {
    this.#opts.onDepth?.(this.#queue.length);
  }
}
