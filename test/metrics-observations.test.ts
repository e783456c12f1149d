// The histograms' observations counted per bucket between scrapes (src/metrics/tally.ts) render
// exactly what prom-client's own observe() renders for the same values: across scrapes, for series
// zeroed beforehand, for values on a bucket's bound, past the last bound and zero. It reaches into
// prom-client's series (its hash and bucket map): a prom-client that changed them fails here.
import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { Observations } from "../src/metrics/tally.js";

const BUCKETS = [0.01, 0.1, 1, 10];

function pair() {
  const plain = new Registry();
  const counted = new Registry();
  const observations = new Observations(BUCKETS);
  const config = { name: "h", help: "h", labelNames: ["channel", "priority"] as const, buckets: BUCKETS };
  const reference = new Histogram({ ...config, registers: [plain] });
  const tallied = new Histogram({
    ...config,
    registers: [counted],
    collect() {
      observations.flushInto(this);
    },
  });
  return {
    observe(value: number, channel: string, priority: string) {
      reference.observe({ channel, priority }, value);
      observations.add(value, channel, priority);
    },
    zero(channel: string, priority: string) {
      reference.zero({ channel, priority });
      tallied.zero({ channel, priority });
    },
    render: async () => [await plain.metrics(), await counted.metrics()] as const,
  };
}

describe("histogram observations counted between scrapes", () => {
  it("render as prom-client's observe() does, scrape after scrape", async () => {
    const h = pair();
    h.zero("a", "0");
    const values = [0, 0.01, 0.0100001, 0.05, 0.1, 0.5, 1, 3, 10, 10.5, 1e9];
    values.forEach((v, i) => h.observe(v, i % 3 ? "a" : "b", String(i % 2)));
    const [plain, counted] = await h.render();
    expect(counted).toBe(plain);
    expect(plain).toContain('h_bucket{le="+Inf",channel="a",priority="0"}');

    // a second scrape with nothing new, then more observations on old and new series
    expect((await h.render())[1]).toBe(plain);
    for (let i = 0; i < 500; i++) h.observe((i * 7919) % 23 / 2, ["a", "b", "c"][i % 3]!, String(i % 4));
    const [plain2, counted2] = await h.render();
    expect(counted2).toBe(plain2);
    expect(counted2).not.toBe(counted);
  });

  it("keeps counting into a series prom-client dropped (a registry reset)", async () => {
    const registry = new Registry();
    const observations = new Observations(BUCKETS);
    const hist = new Histogram({ name: "r", help: "r", labelNames: ["channel", "priority"], buckets: BUCKETS, registers: [registry], collect() { observations.flushInto(this); } });
    observations.add(2, "x", "1");
    await registry.metrics();
    hist.reset();
    observations.add(3, "x", "1");
    const text = await registry.metrics();
    expect(text).toContain('r_count{channel="x",priority="1"} 1');
    expect(text).toContain('r_sum{channel="x",priority="1"} 3');
  });
});
