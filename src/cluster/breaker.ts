// One channel's circuit breaker (docs/configuration.md#routing): `failures` consecutive failed attempts open it for
// the cooldown (or the upstream's Retry-After, if longer); past it, one probe goes through
// (half-open): success closes it, failure reopens it with the cooldown doubled. Neither the doubling
// nor a Retry-After keeps it open longer than `maxCooldownMs` at once.
import type { BreakerView } from "./types.js";

/** `routing.breaker.maxCooldownMs` when the options give none (docs/configuration.md#routing) */
export const DEFAULT_MAX_COOLDOWN_MS = 5 * 60_000;

export interface BreakerOptions {
  failures: number;
  cooldownMs: number;
  /** the longest one opening lasts: an upstream's `Retry-After: 999999` must not close a channel for days */
  maxCooldownMs?: number;
}

/** Fixed options, or a function that reads the current config's (a reload changes them at once). */
export type BreakerSettings = BreakerOptions | (() => BreakerOptions);

export class Breaker {
  #view: BreakerView = { phase: "closed", failures: 0, retryAt: 0 };
  #cooldownMs: number;
  readonly #opts: () => BreakerOptions;

  constructor(settings: BreakerSettings) {
    this.#opts = typeof settings === "function" ? settings : () => settings;
    this.#cooldownMs = this.#opts().cooldownMs;
  }

  get view(): BreakerView {
    return { ...this.#view };
  }

  /** True when a call may go now; past the cooldown, one probe at a time (another after a further cooldown, should a probe never report). */
  admit(now: number): boolean {
    const v = this.#view;
    if (v.phase === "closed") return true;
    if (now < v.retryAt) return false;
    v.phase = "half_open";
    v.retryAt = now + this.#cooldownMs;
    return true;
  }

  record(ok: boolean, now: number, retryAfterMs = 0): void {
    const v = this.#view;
    if (ok) {
      this.#view = { phase: "closed", failures: 0, retryAt: 0 };
      this.#cooldownMs = this.#opts().cooldownMs;
      return;
    }
    v.failures++;
    const opts = this.#opts();
    const maxMs = opts.maxCooldownMs ?? DEFAULT_MAX_COOLDOWN_MS;
    if (v.phase === "half_open") this.#cooldownMs = Math.min(this.#cooldownMs * 2, maxMs);
    else if (v.failures < opts.failures) return;
    v.phase = "open";
    v.retryAt = now + Math.min(Math.max(this.#cooldownMs, retryAfterMs), maxMs);
  }
}
