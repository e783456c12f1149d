// A channel's gate (docs/routing.md#priority-and-fairness): at most `connections` calls at once; the
// rest wait in the gateway's queue for at most `queueTimeoutMs`, and a freed slot goes to the waiter
// with the highest effective priority (its priority plus one for each `agingMs` it has waited, so
// none starves), among those to the app served least recently (round robin across apps), inside an
// app to the oldest (FIFO). A wait past the deadline is refused (503 channel_busy,
// docs/api.md#upstream-failures), and so is an arrival at a full queue — unless it outranks the
// queue's weakest waiter (a lower effective priority, or at the same one an app with more waiters),
// which is refused in its place: so a burst never queues without bound, and one app's burst cannot
// shut the others out of the channel. A ticket below priority 0 (a batch line, docs/batches.md#how-lines-run)
// is never aged to 0 or above, and never given one of the slots held in reserve for interactive calls
// (`reserveLow`): an interactive arrival finds room at once. When more arrive than the reserve
// holds, each that would wait stops the newest preemptible batch line (`Ticket.preempt`), whose slot
// passes to it as soon as the line lets go (docs/batches.md#preemption).
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

/** Told a granted call's wait: the attempt it was made for (./attempt.ts). */
export interface QueueListener {
  queued(waitedMs: number): void;
}

/** Who waits: the caller's configured priority and app (absent: priority 0, one shared app). */
export interface Ticket {
  priority?: number;
  app?: string;
  /** a ticket below 0 that may be stopped for an interactive call: the gate calls it when an
   *  interactive call would wait, and the holder gives its slot back (docs/batches.md#preemption) */
  preempt?: () => void;
}

export type Release = () => void;

/** A gate's state as headroom reads it. */
export interface GateView {
  connections: number;
  active: number;
  /** of `active`: tickets below priority 0 */
  lowActive: number;
  queued: number;
  /** of `queued`: tickets at priority 0 or above */
  interactiveQueued: number;
}

interface Waiter {
  priority: number;
  /** below 0: a batch line */
  low: boolean;
  preempt: (() => void) | undefined;
  app: string;
  since: number;
  grant: (release: Release) => void;
  /** takes the waiter out of the queue, refused as busy (503 channel_busy) */
  evict: () => void;
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
  /** of #active: calls of tickets below priority 0 */
  #lowActive = 0;
  /** slots a ticket below priority 0 is never given (set by headroom, ./headroom.ts) */
  #reserve = 0;
  #grants = 0;
  /** batch lines holding a slot that may be stopped, newest last */
  readonly #preemptible: Array<() => void> = [];
  /** lines told to stop whose slots have not come back yet */
  #preempting = 0;
  readonly #queue: Waiter[] = [];
  /** app → its calls in the queue (an app leaves when its last one does) */
  readonly #waiting = new Map<string, number>();
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

  /** batch lines holding a slot that an interactive call would take (docs/batches.md#preemption) */
  get preemptible(): number {
    return this.#preemptible.length;
  }

  /** An interactive call sent now would hold a slot at once: a free one, or a batch line's that
   *  stops for it (docs/batches.md#preemption). */
  hasRoom(): boolean {
    return this.#active - this.#preemptible.length < this.#opts.connections;
  }

  /** What headroom reads (./headroom.ts): slots, calls holding one, those of tickets below 0, and
   *  the waiters at priority 0 or above. */
  view(): GateView {
    let interactiveQueued = 0;
    for (const w of this.#queue) if (!w.low) interactiveQueued++;
    return { connections: this.#opts.connections, active: this.#active, lowActive: this.#lowActive, queued: this.#queue.length, interactiveQueued };
  }

  /** Keeps `slots` of the gate's slots for tickets at priority 0 or above (never all of them). */
  reserveLow(slots: number): void {
    this.#reserve = Math.max(0, Math.min(slots, this.#opts.connections - 1));
  }

  /** A ticket below 0 may take a slot only while `active` leaves the reserve free. */
  #lowFits(active: number): boolean {
    return active < this.#opts.connections - this.#reserve;
  }

  /** A slot, released by calling the returned function once; rejects with GateRefused. */
  acquire(signal?: Cancel, ticket: Ticket = {}, listener?: QueueListener): Promise<Release> {
    const priority = ticket.priority ?? 0;
    const app = ticket.app ?? "";
    const low = priority < 0;
    if (low ? this.#lowFits(this.#active) && !this.#queue.some((w) => w.low) : this.#active < this.#opts.connections) {
      this.#active++;
      if (low) this.#lowActive++;
      this.#served.set(app, ++this.#grants);
      this.#opts.onWait?.(0, priority);
      listener?.queued(0);
      return Promise.resolve(this.#releaser(low, low ? ticket.preempt : undefined));
    }
    if (this.#queue.length >= this.#opts.maxQueue && !this.#makeRoom(priority, app)) return Promise.reject(new GateRefused("busy"));
    return new Promise<Release>((resolve, reject) => {
      const leave = (reason: "busy" | "cancelled") => {
        const at = this.#queue.indexOf(waiter);
        if (at < 0) return;
        this.#queue.splice(at, 1);
        this.#left(app);
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
        low,
        preempt: low ? ticket.preempt : undefined,
        app,
        since: this.#now(),
        grant: (release) => {
          done();
          const waited = this.#now() - waiter.since;
          this.#opts.onWait?.(waited, priority);
          listener?.queued(waited);
          resolve(release);
        },
        evict: () => leave("busy"),
      };
      signal?.once("abort", onAbort);
      this.#queue.push(waiter);
      this.#waiting.set(app, (this.#waiting.get(app) ?? 0) + 1);
      this.#depthChanged();
      if (!low) this.#preemptFor();
    });
  }

  /** An interactive call queued: the newest preemptible line is told to stop, unless the lines
   *  already told to free as many slots as interactive calls wait. */
  #preemptFor(): void {
    let interactive = 0;
    for (const w of this.#queue) if (!w.low) interactive++;
    if (this.#preempting >= interactive) return;
    const preempt = this.#preemptible.pop();
    if (!preempt) return;
    this.#preempting++;
    preempt();
  }

  #releaser(low: boolean, stop?: () => void): Release {
    let released = false;
    let told = false;
    const preempt = stop && (() => ((told = true), stop()));
    if (preempt) this.#preemptible.push(preempt);
    return () => {
      if (released) return;
      released = true;
      if (low) this.#lowActive--;
      if (told) this.#preempting--;
      else if (preempt) this.#preemptible.splice(this.#preemptible.indexOf(preempt), 1);
      const next = this.#next();
      if (next) {
        // the slot passes straight to the next waiter: #active stays the same
        if (next.low) this.#lowActive++;
        this.#depthChanged();
        next.grant(this.#releaser(next.low, next.preempt));
      } else {
        this.#active--;
      }
    };
  }

  /** Takes the waiter to serve next out of the queue: highest effective priority, then the app
   *  served least recently, then the oldest (the queue is in arrival order); none when that is a
   *  ticket below 0 and the freed slot is one of the reserve (every ticket at 0 or above outranks it). */
  #next(): Waiter | undefined {
    if (this.#queue.length === 0) return undefined;
    const now = this.#now();
    let best = -1;
    let bestPriority = 0;
    let bestServed = 0;
    for (let i = 0; i < this.#queue.length; i++) {
      const w = this.#queue[i]!;
      const effective = this.#effective(w, now);
      const served = this.#served.peek(w.app) ?? 0;
      if (best < 0 || effective > bestPriority || (effective === bestPriority && served < bestServed)) {
        best = i;
        bestPriority = effective;
        bestServed = served;
      }
    }
    if (this.#queue[best]!.low && !this.#lowFits(this.#active - 1)) return undefined;
    const [next] = this.#queue.splice(best, 1);
    this.#left(next!.app);
    this.#served.set(next!.app, ++this.#grants);
    return next;
  }

  /** At a full queue: refuses the weakest waiter in favour of an arrival (priority, app) that
   *  outranks it — a higher effective priority, or the same one and an app that, with the arrival,
   *  still has fewer waiters than the weakest's app. True when the arrival may queue. */
  #makeRoom(priority: number, app: string): boolean {
    const weakest = this.#weakest();
    if (!weakest) return false;
    const outranks = priority > weakest.effective || (priority === weakest.effective && (this.#waiting.get(app) ?? 0) + 1 < weakest.count);
    if (outranks) weakest.waiter.evict();
    return outranks;
  }

  /** The waiter a full queue gives up first: the lowest effective priority, then the app with the
   *  most waiters, then the newest. */
  #weakest(): { waiter: Waiter; effective: number; count: number } | undefined {
    const now = this.#now();
    let weakest: { waiter: Waiter; effective: number; count: number } | undefined;
    // newest first: a tie keeps the newer
    for (let i = this.#queue.length - 1; i >= 0; i--) {
      const waiter = this.#queue[i]!;
      const effective = this.#effective(waiter, now);
      const count = this.#waiting.get(waiter.app) ?? 0;
      if (!weakest || effective < weakest.effective || (effective === weakest.effective && count > weakest.count)) weakest = { waiter, effective, count };
    }
    return weakest;
  }

  /** Priority plus one for each `agingMs` waited; a ticket below 0 stays below 0 (-1 at most), so
   *  every interactive call goes before any batch line however long it waited. */
  #effective(w: Waiter, now: number): number {
    const aged = w.priority + Math.floor((now - w.since) / this.#agingMs);
    return w.low ? Math.min(aged, -1) : aged;
  }

  #left(app: string): void {
    const count = (this.#waiting.get(app) ?? 0) - 1;
    if (count > 0) this.#waiting.set(app, count);
    else this.#waiting.delete(app);
  }

  #depthChanged(): void {
    this.#opts.onDepth?.(this.#queue.length);
  }
}
