// The prefix index (docs/routing.md#prefix): chained chunk hashes of a prompt's bytes, the same
// however the bytes are split into parts; an index that never holds more than its bound, however
// many distinct prefixes it is told; what an engine's metrics say its cache holds; a request's
// parts no longer than the hash reads, whatever the request holds beyond.
import { describe, expect, it } from "vitest";
import type { AffinitySignals } from "../src/metered/affinity.js";
import { prefixParts } from "../src/metered/prefix.js";
import { parseCacheTokens } from "../src/upstream/engine-load.js";
import { CHUNK_BYTES, MAX_PREFIX_BYTES, PrefixIndex, PrefixIndexes, RESIZE_MS, chunksFor, hashPrefix } from "../src/upstream/prefix-index.js";

const text = (seed: string, bytes: number) => {
  let out = "";
  for (let i = 0; out.length < bytes; i++) out += `${seed}-${i} `;
  return out.slice(0, bytes);
};

describe("hashPrefix", () => {
  it("names each full chunk by everything before its end, however the bytes are split", () => {
    const whole = text("shared", 5 * CHUNK_BYTES + 100);
    const hashes = hashPrefix([whole]);
    expect(hashes).toHaveLength(5);
    // the same bytes as other parts, a string and a buffer cut mid-chunk and mid-word
    expect(hashPrefix([whole.slice(0, 1500), Buffer.from(whole.slice(1500, 3001)), whole.slice(3001)])).toEqual(hashes);
    // a change in chunk 3 changes chunks 3 and 4 only: a match is a leading run
    const changed = `${whole.slice(0, 3 * CHUNK_BYTES + 10)}X${whole.slice(3 * CHUNK_BYTES + 11)}`;
    const other = hashPrefix([changed]);
    expect(other.slice(0, 3)).toEqual(hashes.slice(0, 3));
    expect(other[3]).not.toBe(hashes[3]);
    expect(other[4]).not.toBe(hashes[4]);
    // non-ASCII text counts its UTF-8 bytes
    expect(hashPrefix(["é".repeat(CHUNK_BYTES)])).toHaveLength(2);
  });
});

describe("PrefixIndex", () => {
  it("never holds more chunks than its bound, whatever it is told (100,000 distinct prefixes)", () => {
    const index = new PrefixIndex(chunksFor(262_144));
    expect(index.max).toBe(1024);
    for (let p = 0; p < 100_000; p++) {
      index.record(hashPrefix([`prefix ${p} `, text(`p${p}`, 2 * CHUNK_BYTES)]));
      if (p % 10_000 === 0) expect(index.size).toBeLessThanOrEqual(index.max);
    }
    expect(index.size).toBe(index.max);
    // the most recent prefixes are held whole, the oldest not at all
    expect(index.match(hashPrefix([`prefix 99999 `, text("p99999", 2 * CHUNK_BYTES)]))).toBe(2);
    expect(index.match(hashPrefix([`prefix 0 `, text("p0", 2 * CHUNK_BYTES)]))).toBe(0);
  });

  it("evicts a prompt's tail before its head, and keeps its most recent entries when resized", () => {
    const index = new PrefixIndex(4);
    const a = hashPrefix([text("a", 4 * CHUNK_BYTES)]);
    index.record(a);
    index.record(hashPrefix([text("b", 2 * CHUNK_BYTES)]));
    expect(index.match(a)).toBe(2);
    const indexes = new PrefixIndexes();
    const first = indexes.of("r1", 4 * CHUNK_BYTES / 4);
    first.record(a);
    const bigger = indexes.of("r1", 8 * CHUNK_BYTES / 4);
    expect(bigger.max).toBe(8);
    expect(bigger.match(a)).toBe(4);
    indexes.keep(new Set(["r2"]));
    expect(indexes.entries("r1")).toBe(0);
  });
});

describe("parseCacheTokens", () => {
  it("reads vLLM's cache_config_info and SGLang's max total tokens", () => {
    const vllm = '# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="28000",num_cpu_blocks="0"} 1.0\n';
    expect(parseCacheTokens(vllm)).toBe(448_000);
    expect(parseCacheTokens('sglang:num_running_reqs{x="y"} 1\nsglang:max_total_num_tokens{model_name="m"} 500000.0\n')).toBe(500_000);
    expect(parseCacheTokens("vllm:num_requests_running 3\n")).toBeUndefined();
    expect(parseCacheTokens('vllm:cache_config_info{block_size="x"} 1\n')).toBeUndefined();
  });
});

describe("prefixParts", () => {
  // a 4 MB image in a message's parts, a 4 MB tool description, 4 MB of tool call arguments
  const big = "x".repeat(4 * 1024 * 1024);
  const image = { type: "image_url", image_url: { url: `data:image/png;base64,${big}` } };
  const tool = { type: "function", function: { name: "f", description: big } };
  const call = { id: "c1", type: "function", function: { name: "f", arguments: big } };
  const cases: Array<[string, AffinitySignals]> = [
    ["an image part", { prompt: [{ role: "user", content: [{ type: "text", text: "look" }, image] }] }],
    ["the tools", { prompt: [{ role: "user", content: "hi" }], tools: [tool] }],
    ["a tool call", { prompt: [{ role: "assistant", content: null, tool_calls: [call] } as { role: string; content: unknown }] }],
    ["many messages", { prompt: Array.from({ length: 50_000 }, (_, i) => ({ role: "user", content: `question ${i}` })) }],
  ];
  for (const [what, signals] of cases) {
    it(`holds no more than the hash reads of ${what}, and hashes as its whole JSON does`, () => {
      const parts = prefixParts(signals, "m1");
      const length = parts.reduce((n, p) => n + p.length, 0);
      // before: 4.2 MB of parts (an image's, the tools' and the call's JSON made whole: ~7 ms a
      // request), 0.9 MB for the 50 000 messages
      expect(length).toBeLessThan(MAX_PREFIX_BYTES + 1024);
      const prompt = signals.prompt as Array<{ role: string; content: unknown; tool_calls?: unknown }>;
      const whole = [
        "m1\u0000",
        ...(signals.tools ? ["\u001etools\u001f", JSON.stringify(signals.tools)] : []),
        ...prompt.flatMap((m) => [
          `\u001e${m.role}\u001f`,
          ...(typeof m.content === "string" ? [m.content] : Array.isArray(m.content) ? m.content.map((p: { text?: string }) => p.text ?? JSON.stringify(p)) : []),
          ...(m.tool_calls ? [JSON.stringify(m.tool_calls)] : []),
        ]),
      ];
      expect(hashPrefix(parts)).toEqual(hashPrefix(whole));
    });
  }
});

describe("PrefixIndexes", () => {
  it("resizes a channel's index at most once a RESIZE_MS, however often its engine says another size", () => {
    let now = 0;
    const indexes = new PrefixIndexes(() => now);
    const index = indexes.of("r1", 1000 * CHUNK_BYTES / 4);
    index.record(hashPrefix([text("a", 8 * CHUNK_BYTES)]));
    // the first size the engine tells is taken at once
    const told = indexes.of("r1", 2000 * CHUNK_BYTES / 4);
    expect(told.max).toBe(2000);
    // an engine whose metrics flip between two sizes at every scrape: before, every flip copied
    // the index (50 copies here; ~150 ms each at the cap of 262 144 chunks, on the request's path)
    const seen = new Set<PrefixIndex>([told]);
    for (let i = 0; i < 50; i++) {
      now += 100;
      seen.add(indexes.of("r1", (i % 2 ? 2000 : 1999) * CHUNK_BYTES / 4));
    }
    expect(seen.size).toBe(1);
    now += RESIZE_MS;
    const later = indexes.of("r1", 1999 * CHUNK_BYTES / 4);
    expect(later.max).toBe(1999);
    expect(later.size).toBe(8);
  });
});
