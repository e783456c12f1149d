// Counter increments and histogram observations summed per label set between scrapes
// (docs/operations.md#metrics).
import { createRequire } from "node:module";
import type { Counter, Histogram } from "prom-client";

/** Label sets as a tree, one level per label value: a repeated label set costs a few lookups of
 *  short strings (a key joined from the values cost four times as much). Label values come in the
 *  order of the family's labelNames; the sets are bounded as the labels are. */
class LabelSets<E extends { values: string[] }> {
  readonly #root: Level<E> = { next: new Map(), entry: undefined };
  readonly entries: E[] = [];

  constructor(private readonly make: (values: string[]) => E) {}

  /** the entry of the label values a, b, c, d (as many as the family has labels) */
  of(a: string, b?: string, c?: string, d?: string): E {
    let level = step(this.#root, a);
    if (b !== undefined) level = step(level, b);
    if (c !== undefined) level = step(level, c);
    if (d !== undefined) level = step(level, d);
    if (level.entry) return level.entry;
    const entry = this.make([a, b, c, d].filter((v) => v !== undefined));
    this.entries.push(entry);
    return (level.entry = entry);
  }
}

interface Level<E> {
  next: Map<string, Level<E>>;
  entry: E | undefined;
}

function step<E>(level: Level<E>, value: string): Level<E> {
  let next = level.next.get(value);
  if (!next) level.next.set(value, (next = { next: new Map(), entry: undefined }));
  return next;
}

/**
 * A counter's increments, handed to prom-client when the family is read (its collect hook, which
 * every scrape and every worker's collection runs): prom-client hashes and checks the labels on each
 * inc(), which cost more than the rest of a request's metrics.
 */
export class Tally {
  readonly #sets = new LabelSets<{ values: string[]; n: number; handed: boolean }>((values) => ({ values, n: 0, handed: false }));

  /** `n` more for the label values a, b, c, d */
  add(n: number, a: string, b?: string, c?: string, d?: string): void {
    this.#sets.of(a, b, c, d).n += n;
  }

  flushInto(counter: Counter<string>): void {
    for (const entry of this.#sets.entries) {
      // `handed`: the series exists in prom-client (a zero step still makes it appear, as inc(0) did)
      if (entry.n === 0 && entry.handed) continue;
      counter.labels(...entry.values).inc(entry.n);
      entry.n = 0;
      entry.handed = true;
    }
  }
}

interface Spread {
  values: string[];
  /** observations per bucket, not cumulative: [i] those ≤ bounds[i] and > bounds[i - 1] */
  counts: number[];
  sum: number;
  count: number;
  /** per bucket (the last past every bound, +Inf), the latest observation of a sampled trace */
  exemplars: Array<Exemplar | undefined> | undefined;
}

/** An OpenMetrics exemplar as prom-client renders it (lib/exemplar.js): labels, value, epoch seconds. */
interface Exemplar {
  labelSet: { trace_id: string };
  value: number;
  timestamp: number;
}

/** prom-client's series of one label set (lib/histogram.js): its buckets by upper bound, sum, count */
interface PromSeries {
  bucketValues: Record<number, number>;
  /** per upper bound, -1 for +Inf: what get() hands on as each bucket's exemplar (only an
   *  OpenMetrics rendering shows them; prom-client's own enableExemplars is refused on the
   *  Prometheus registry this one is, so they are set here) */
  bucketExemplars?: Record<number, Exemplar | undefined>;
  sum: number;
  count: number;
}
interface PromHistogram {
  hashMap: Record<string, PromSeries | undefined>;
  sortedLabelNames: string[];
  labelNames: string[];
}
// prom-client's own label hash, the key of its series (lib/util.js); the histograms' test renders
// these families against plain observe() calls, so a prom-client that changed this fails there
const { hashObject } = createRequire(import.meta.url)("prom-client/lib/util.js") as {
  hashObject(labels: Record<string, string>, names: string[]): string;
};

/**
 * A histogram's observations, counted per bucket and handed to prom-client when the family is read:
 * prom-client's observe() hashes and checks the labels each time, a microsecond or more per call
 * and several calls a request.
 */
export class Observations {
  readonly #sets: LabelSets<Spread>;

  constructor(private readonly bounds: readonly number[]) {
    this.#sets = new LabelSets((values) => ({ values, counts: bounds.map(() => 0), sum: 0, count: 0, exemplars: undefined }));
  }

  /** one observation of `value` for the label values a, b; `traceId` that of a sampled trace it
   *  belongs to, kept as its bucket's exemplar (docs/tracing.md#exemplars) */
  add(value: number, a: string, b?: string, traceId?: string): void {
    const s = this.#sets.of(a, b);
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) s.counts[i]!++;
    s.sum += value;
    s.count++;
    if (traceId !== undefined) {
      s.exemplars ??= [];
      s.exemplars[i] = { labelSet: { trace_id: traceId }, value, timestamp: Date.now() / 1000 };
    }
  }

  flushInto(histogram: Histogram<string>): void {
    const h = histogram as unknown as PromHistogram;
    for (const s of this.#sets.entries) {
      if (s.count === 0) continue;
      const labels = Object.fromEntries(h.labelNames.map((name, i) => [name, s.values[i]!]));
      const hash = hashObject(labels, h.sortedLabelNames);
      let series = h.hashMap[hash];
      if (!series) {
        histogram.zero(labels);
        series = h.hashMap[hash]!;
      }
      this.bounds.forEach((bound, i) => {
        series.bucketValues[bound]! += s.counts[i]!;
        s.counts[i] = 0;
      });
      if (s.exemplars) handExemplars(s.exemplars, this.bounds, (series.bucketExemplars ??= {}));
      s.exemplars = undefined;
      series.sum += s.sum;
      series.count += s.count;
      s.sum = 0;
      s.count = 0;
    }
  }
}

/** The exemplars seen since the last scrape replace their buckets' earlier ones (prom-client keeps
 *  one per bucket, -1 the +Inf bucket's). */
function handExemplars(seen: Array<Exemplar | undefined>, bounds: readonly number[], into: Record<number, Exemplar | undefined>): void {
  seen.forEach((exemplar, i) => {
    if (exemplar) into[i < bounds.length ? bounds[i]! : -1] = exemplar;
  });
}
