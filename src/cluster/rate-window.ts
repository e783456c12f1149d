// A 60-second sliding window of per-second counters: O(1) per hit however high the rate (the
// counters of seconds that left the window are cleared as the window moves, at most 60 per hit).
// Checking and counting are apart, so that a request is counted only once all its checks passed.

const SECONDS = 60;

export class RateWindow {
  readonly #counts = new Uint32Array(SECONDS);
  #sum = 0;
  /** the second (epoch seconds) of the newest counter */
  #head = Number.NEGATIVE_INFINITY;

  /** Milliseconds until a hit at `now` (epoch ms) would be allowed: 0 when fewer than `limit` hits
   *  are in the window. Counts nothing. */
  wait(now: number, limit: number): number {
    const second = Math.floor(now / 1000);
    this.#advance(second);
    return this.#sum >= limit ? this.#oldestLeavesAt(second) - now : 0;
  }

  /** Counts a hit at `now`, allowed or not (ask `wait` first). */
  count(now: number): void {
    const second = Math.floor(now / 1000);
    this.#advance(second);
    this.#counts[second % SECONDS]!++;
    this.#sum++;
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
