// A 60-second sliding window of per-second counters: O(1) per hit however high the rate (the
// counters of seconds that left the window are cleared as the window moves, at most 60 per hit).

const SECONDS = 60;

export class RateWindow {
  readonly #counts = new Uint32Array(SECONDS);
  #sum = 0;
  /** the second (epoch seconds) of the newest counter */
  #head = Number.NEGATIVE_INFINITY;

  /** Counts a hit at `now` (epoch ms) unless `limit` hits are already in the window. */
  hit(now: number, limit: number): { allowed: boolean; retryAfterMs: number } {
    const second = Math.floor(now / 1000);
    this.#advance(second);
    if (this.#sum >= limit) return { allowed: false, retryAfterMs: this.#oldestLeavesAt(second) - now };
    this.#counts[second % SECONDS]!++;
    this.#sum++;
    return { allowed: true, retryAfterMs: 0 };
  }

  /** True when no hit is left in the window at `now` (the window can be forgotten). */
  idle(now: number): boolean {
    return Math.floor(now / 1000) - this.#head >= SECONDS || this.#sum === 0;
  }

  #advance(second: number): void {
    const gap = second - this.#head;
    if (gap <= 0) return;
    if (gap >= SECONDS) {
      this.#counts.fill(0);
      this.#sum = 0;
    } else {
      for (let s = this.#head + 1; s <= second; s++) {
        const at = s % SECONDS;
        this.#sum -= this.#counts[at]!;
        this.#counts[at] = 0;
      }
    }
    this.#head = second;
  }

  /** Epoch ms when the oldest counted hit leaves the window. */
  #oldestLeavesAt(second: number): number {
    for (let s = second - SECONDS + 1; s <= second; s++) {
      if (this.#counts[((s % SECONDS) + SECONDS) % SECONDS]! > 0) return (s + SECONDS) * 1000;
    }
    return (second + 1) * 1000;
  }
}
