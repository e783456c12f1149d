// Counter increments summed per label set between scrapes (docs/operations.md#metrics).
import type { Counter } from "prom-client";
/**
 * A counter's increments summed here per label set and handed to prom-client when the family is read
 * (its collect hook, which every scrape and every worker's collection runs): prom-client hashes and
 * checks the labels on each inc(), which cost more than the rest of a request's metrics. Label
 * values come in the order of the counter's labelNames; the sets are bounded as the labels are.
 */
export class Tally {
  // one level per label value, so that a repeated label set costs a few lookups of short strings
  // (a key joined from the values cost four times as much); an entry where a label set ends
  readonly #root: TallyLevel = { next: new Map(), entry: undefined };
  readonly #entries: TallyEntry[] = [];

  /** `n` more for the label values a, b, c, d (as many as the counter has labels) */
  add(n: number, a: string, b?: string, c?: string, d?: string): void {
    let level = this.#step(this.#root, a);
    if (b !== undefined) level = this.#step(level, b);
    if (c !== undefined) level = this.#step(level, c);
    if (d !== undefined) level = this.#step(level, d);
    if (level.entry) level.entry.n += n;
    else this.#entries.push((level.entry = { values: [a, b, c, d].filter((v) => v !== undefined), n, handed: false }));
  }

  flushInto(counter: Counter<string>): void {
    for (const entry of this.#entries) {
      // `handed`: the series exists in prom-client (a zero step still makes it appear, as inc(0) did)
      if (entry.n === 0 && entry.handed) continue;
      counter.labels(...entry.values).inc(entry.n);
      entry.n = 0;
      entry.handed = true;
    }
  }

  #step(level: TallyLevel, value: string): TallyLevel {
    let next = level.next.get(value);
    if (!next) level.next.set(value, (next = { next: new Map(), entry: undefined }));
    return next;
  }
}

interface TallyLevel {
  next: Map<string, TallyLevel>;
  entry: TallyEntry | undefined;
}

interface TallyEntry {
  values: string[];
  n: number;
  handed: boolean;
}
