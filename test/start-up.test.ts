// What the gateway does before it can answer (docs/performance.md#start-up): bounded caches that
// hold nothing until used (a cache bounded by lru-cache's `max` allocates storage for all its
// entries when made: 15-20 ms of start-up for 100,000 of them), the built gateway's token
// encodings read from the JSON the build wrote, the store's channel records read (and the runtime
// built over them) before the first request. How long
// start-up takes is the benchmark's `start` section, never a test's.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { createMemoryClusterState } from "../src/cluster/memory.js";
import { TOKENIZER_NAMES, loadEncoder, ranksJson } from "../src/tokens/encodings.js";
import { createStore } from "../src/store/index.js";
import type { Store } from "../src/store/types.js";
import { createHistoryCounts } from "../src/tokens/history-counts.js";
import { startGateway } from "./support/gateway.js";
import { REPO_ROOT } from "./support/main-process.js";


// the heap a value keeps, measured between two full collections
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
function retainedBytes(make: () => unknown): number {
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = make();
  gc();
  const bytes = process.memoryUsage().heapUsed - before;
  expect(kept).toBeDefined();
  return bytes;
}

describe("start-up", () => {
  it("the in-process cluster state holds no storage for its 100,000 scopes until they are used", async () => {
    expect(retainedBytes(() => createMemoryClusterState({ failures: 3, cooldownMs: 1000 }))).toBeLessThan(256 * 1024);
    // ... and still counts what it is given
    const state = createMemoryClusterState({ failures: 3, cooldownMs: 1000 });
    const admit = () => state.admit([{ scope: "key:k", max: 10 }], 1, [{ scope: "key:k", limit: 1 }], Date.now(), async () => 0);
    expect(await admit()).toMatchObject({ ok: true });
    expect(await admit()).toMatchObject({ ok: false, refused: "rate" });
  });

  it("the conversation counts hold no storage until a count is kept", () => {
    expect(retainedBytes(() => createHistoryCounts())).toBeLessThan(256 * 1024);
    const counts = createHistoryCounts().forChat("app", "chat", "cl100k_base");
    counts.set(counts.keyOf("hello"), 1);
    expect(counts.get(counts.keyOf("hello"))).toBe(1);
  });

  it("the built gateway's encodings come from the JSON the build wrote: the package's tables, counting as its modules do", async () => {
    // dist/ as vitest's global setup built it
    const built = (await import(pathToFileURL(join(REPO_ROOT, "dist/tokens/encodings.js")).href)) as typeof import("../src/tokens/encodings.js");
    const text = "Hello, world! ça va? 你好 — <|endoftext|> \u{1F600} 12345 \n\n  indented";
    const asText = { disallowedSpecial: new Set<string>() };
    for (const name of TOKENIZER_NAMES) {
      expect(readFileSync(built.ranksFile(name), "utf8") === ranksJson(name), name).toBe(true);
      expect(built.loadEncoder(name).countTokens(text, asText), name).toBe(loadEncoder(name).countTokens(text, asText));
    }
  });

  it("a gateway reads the store's channel records as it is made, not on its first request", async () => {
    const store = createStore({ driver: "memory" });
    let reads = 0;
    const counting: Store = { ...store, listChannelRecords: () => (reads++, store.listChannelRecords()) };
    const shipped = JSON.parse(readFileSync(join(REPO_ROOT, "config.json"), "utf8"));
    const gw = await startGateway({ ...shipped, store: { driver: "memory" } }, { store: counting });
    try {
      // listening, no request yet: the runtime the first request gets is already built over them
      expect(reads).toBeGreaterThan(0);
    } finally {
      await gw.close();
      await store.close();
    }
  });
});
