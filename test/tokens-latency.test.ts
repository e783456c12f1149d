// Counting in linear time never stalls the event loop (issue 27): a latency ceiling, so this file runs
// in the "alone" group after the suite (vitest.config.ts), where another file's work on the same two
// cores cannot be what it measures.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { countText, countTextAsync } from "../src/tokens/counter.js";
import { createTally } from "../src/tokens/tally.js";
import { randomRun, seeded } from "./support/text-corpus.js";

describe("counting in linear time", () => {
  it("never blocks the event loop 100 ms while counting 2 MB words of letters, CJK or emoji, or a 400 KB word (as text or as a message)", async () => {
    const rnd = seeded(42);
    // 2 MB words repeat a 256 KB block, which gpt-tokenizer's merge cache then knows: the first block
    // alone is well over 100 ms of BPE, the rest keeps the test short
    const texts = [
      randomRun(rnd, 1 << 18, 0x61, 26).repeat(8),
      randomRun(rnd, 1 << 18, 0x4e00, 20000).repeat(8),
      randomRun(rnd, 1 << 18, 0x1f300, 700).repeat(8),
      randomRun(rnd, 400_000, 0x41, 26),
    ];
    countText("warm up: the encoding's tables load synchronously once");
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    await sleep(25); // the histogram records from its second tick on
    const counts = [];
    for (const text of texts) counts.push(await countTextAsync(text));
    const word = [{ role: "user" as const, content: texts[3]! }];
    counts.push(await createTally(word, "cl100k_base").group([0]).count());
    await sleep(25); // the histogram's 10 ms timer records a stall only when it next runs
    delay.disable();
    const maxMs = delay.max / 1e6;
    expect(maxMs, `longest event-loop delay ${maxMs.toFixed(1)} ms`).toBeLessThan(100);
    counts.forEach((n, i) => expect(n).toBeGreaterThan([...texts, texts[3]!][i]!.length / 8));
  });

});
