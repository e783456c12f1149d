// The cost of routing one request by prefix (docs/performance.md#routing-by-prefix): a 100K-token
// chat prompt (400 KB: a system prompt, then turns) made into its prefix parts and hashed, then
// scored over 8 channels whose indexes each hold their share of 64 such prompts, and recorded on
// the chosen one — each step timed alone, in this process, over many repetitions.
import { prefixParts } from "../../src/metered/prefix.js";
import type { ChannelView } from "../../src/upstream/pick.js";
import { PrefixIndexes, hashPrefix } from "../../src/upstream/prefix-index.js";
import { pickByPrefix } from "../../src/upstream/prefix-score.js";
import type { ChannelEntry } from "../../src/upstream/types.js";

export interface PrefixCost {
  channels: number;
  promptBytes: number;
  chunks: number;
  /** µs per request: rendering the parts, hashing them, scoring every channel, recording on the chosen */
  partsUs: number;
  hashUs: number;
  scoreUs: number;
  recordUs: number;
}

const CHANNELS = 8;
const PROMPT_CHARS = 400_000;
const TURN_CHARS = 4_000;

function conversation(seed: string): Array<{ role: string; content: string }> {
  const messages = [{ role: "system", content: `system ${"rules of the agent ".repeat(2_400)}` }];
  for (let t = 0; messages.reduce((n, m) => n + m.content.length, 0) < PROMPT_CHARS; t++) {
    messages.push({ role: t % 2 ? "assistant" : "user", content: `${seed} turn ${t} ${"tool output line ".repeat(TURN_CHARS / 17)}` });
  }
  return messages;
}

const timeUs = (repeat: number, run: () => void): number => {
  for (let i = 0; i < Math.min(20, repeat); i++) run();
  const started = performance.now();
  for (let i = 0; i < repeat; i++) run();
  return ((performance.now() - started) * 1000) / repeat;
};

export function measurePrefixCost(repeat = 200): PrefixCost {
  const entries = Array.from({ length: CHANNELS }, (_, i) => ({ config: { name: `r${i + 1}`, weight: 1, cacheTokens: 1_600_000 } }) as unknown as ChannelEntry);
  const indexes = new PrefixIndexes();
  const indexOf = (e: ChannelEntry) => indexes.of(e.config.name, e.config.cacheTokens);
  for (let p = 0; p < 64; p++) indexOf(entries[p % CHANNELS]!).record(hashPrefix(prefixParts({ prompt: conversation(`s${p}`) }, "m")));
  const view: ChannelView = { load: (e) => Number(e.config.name.slice(1)) % 3, kv: () => 0.3, kvFull: () => false, gateFull: () => false, breakerOpen: () => false };
  const messages = conversation("s5");
  const parts = prefixParts({ prompt: messages }, "m");
  const hashes = hashPrefix(parts);
  const options = { weights: { match: 3, load: 2, kv: 1 }, imbalance: { ratio: 2, min: 4 }, random: Math.random };
  let chosen = entries[0]!;
  const scoreUs = timeUs(repeat * 10, () => {
    chosen = pickByPrefix(entries, view, { matched: (e) => indexOf(e).match(hashes), chunks: hashes.length, own: undefined, tieKey: `prefix:${hashes[3]}` }, options).first;
  });
  return {
    channels: CHANNELS,
    promptBytes: Buffer.byteLength(messages.map((m) => m.content).join("")),
    chunks: hashes.length,
    partsUs: timeUs(repeat, () => void prefixParts({ prompt: messages }, "m")),
    hashUs: timeUs(repeat, () => void hashPrefix(parts)),
    scoreUs,
    recordUs: timeUs(repeat, () => indexOf(chosen).record(hashes)),
  };
}

export const prefixCostLines = (c: PrefixCost): string[] => [
  `prefix routing cost: a ${(c.promptBytes / 1000).toFixed(0)} KB prompt (${c.chunks} chunks), ${c.channels} channels: parts ${c.partsUs.toFixed(1)} µs, hash ${c.hashUs.toFixed(0)} µs, score ${c.scoreUs.toFixed(1)} µs, record ${c.recordUs.toFixed(0)} µs per request`,
];

// `npx tsx bench/fleet/prefix-cost.ts`: the cost alone
if (import.meta.url === `file://${process.argv[1]}`) console.log(prefixCostLines(measurePrefixCost()).join("\n"));
