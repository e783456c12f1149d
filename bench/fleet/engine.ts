// The simulated engine's scheduler (docs/performance.md#the-fleet-simulator), stepped as vLLM's is:
// at most `maxRunning` sequences run; the rest wait in a queue (FIFO, or by `priority`, lower first,
// under the priority policy), admitted head first while the KV cache has room for them. Each step
// decodes one token of every running sequence that finished its prefill, and spends what is left
// of `maxBatchedTokens` on prefill (chunked prefill); it lasts `decodeMsPerToken` (when any decode)
// plus `prefillUsPerToken` per prefilled token, times `slow`. A prompt's cached blocks are not
// prefilled again.
import { setTimeout as sleep } from "node:timers/promises";
import { PrefixCache } from "./prefix-cache.js";

export interface EngineOptions {
  maxRunning: number;
  blockSize: number;
  cacheBlocks: number;
  maxBatchedTokens: number;
  prefillUsPerToken: number;
  decodeMsPerToken: number;
  slow: number;
  priorityPolicy: boolean;
}

export interface Sequence {
  promptTokens: number;
  /** the prompt's full blocks */
  hashes: string[];
  maxTokens: number;
  priority: number;
  /** each generated token (the first one ends the prefill) */
  onToken(index: number): void;
  onDone(): void;
  /** set at admission */
  cachedTokens?: number;
}

interface Running {
  seq: Sequence;
  prefillLeft: number;
  generated: number;
}

export interface EngineStats {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  generationTokens: number;
}

export class Engine {
  readonly stats: EngineStats = { requests: 0, promptTokens: 0, cachedTokens: 0, generationTokens: 0 };
  readonly cache: PrefixCache;
  readonly #waiting: Array<{ seq: Sequence; order: number }> = [];
  readonly #running: Running[] = [];
  #arrivals = 0;
  #stepping = false;

  constructor(readonly o: EngineOptions) {
    this.cache = new PrefixCache(o.cacheBlocks);
  }

  get running(): number {
    return this.#running.length;
  }
  get waiting(): number {
    return this.#waiting.length;
  }
  /** the fraction of the KV cache's blocks that running sequences hold, as vLLM's kv_cache_usage_perc */
  get kvUsage(): number {
    return Math.min(1, this.#held() / this.o.cacheBlocks);
  }

  /** Whether the prompt can ever fit in the KV cache. */
  fits(promptTokens: number, maxTokens: number): boolean {
    return Math.ceil((promptTokens + maxTokens) / this.o.blockSize) <= this.o.cacheBlocks;
  }

  submit(seq: Sequence): void {
    const entry = { seq, order: this.#arrivals++ };
    const key = (e: typeof entry) => (this.o.priorityPolicy ? e.seq.priority : 0);
    // stable: after every waiting sequence of the same or a more urgent priority
    let at = this.#waiting.length;
    while (at > 0 && key(this.#waiting[at - 1]!) > key(entry)) at--;
    this.#waiting.splice(at, 0, entry);
    if (!this.#stepping) void this.#loop();
  }

  /** The client left: the sequence stops wherever it is. */
  abort(seq: Sequence): void {
    const w = this.#waiting.findIndex((e) => e.seq === seq);
    if (w >= 0) this.#waiting.splice(w, 1);
    const r = this.#running.findIndex((e) => e.seq === seq);
    if (r >= 0) this.#running.splice(r, 1);
  }

  /** Blocks running sequences hold: a full prompt block shared by several (a common prefix) once,
   *  as vLLM's block manager shares it, and each sequence's own partial and generated blocks. */
  #held(): number {
    const shared = new Set<string>();
    let own = 0;
    for (const r of this.#running) {
      for (const hash of r.seq.hashes) shared.add(hash);
      own += Math.ceil((r.seq.promptTokens + r.generated) / this.o.blockSize) - r.seq.hashes.length;
    }
    return shared.size + own;
  }

  /** The blocks a waiting sequence would add: those of its prompt no running one holds, and one to answer. */
  #need(seq: Sequence): number {
    const held = new Set(this.#running.flatMap((r) => r.seq.hashes));
    return Math.ceil((seq.promptTokens + 1) / this.o.blockSize) - seq.hashes.filter((h) => held.has(h)).length;
  }

  /** Admits waiting sequences, head first, while a slot and the KV cache's room allow. */
  #admit(): void {
    let held = this.#held();
    while (this.#waiting.length > 0 && this.#running.length < this.o.maxRunning) {
      const { seq } = this.#waiting[0]!;
      const need = this.#need(seq);
      if (held + need > this.o.cacheBlocks && this.#running.length > 0) break;
      this.#waiting.shift();
      // vLLM recomputes at least the last token (its logits start the answer)
      const matchable = seq.hashes.slice(0, Math.floor((seq.promptTokens - 1) / this.o.blockSize));
      const cached = this.cache.match(matchable) * this.o.blockSize;
      seq.cachedTokens = cached;
      this.stats.requests++;
      this.stats.promptTokens += seq.promptTokens;
      this.stats.cachedTokens += cached;
      this.#running.push({ seq, prefillLeft: seq.promptTokens - cached, generated: 0 });
      held += need;
    }
  }

  async #loop(): Promise<void> {
    this.#stepping = true;
    try {
      for (this.#admit(); this.#running.length > 0; this.#admit()) await this.#step();
    } finally {
      this.#stepping = false;
    }
  }

  async #step(): Promise<void> {
    const decoding = this.#running.filter((r) => r.prefillLeft === 0);
    let budget = Math.max(1, this.o.maxBatchedTokens - decoding.length);
    const prefills: Array<[Running, number]> = [];
    for (const r of this.#running) {
      if (r.prefillLeft === 0 || budget === 0) continue;
      const take = Math.min(r.prefillLeft, budget);
      prefills.push([r, take]);
      budget -= take;
    }
    const prefilled = prefills.reduce((sum, [, n]) => sum + n, 0);
    const ms = ((decoding.length > 0 ? this.o.decodeMsPerToken : 0) + (prefilled * this.o.prefillUsPerToken) / 1000) * this.o.slow;
    await sleep(ms);
    // a sequence aborted during the step is no longer running: it gets nothing
    const live = new Set(this.#running);
    for (const [r, n] of prefills) {
      if (!live.has(r)) continue;
      r.prefillLeft -= n;
      if (r.prefillLeft === 0) {
        this.cache.insert(r.seq.hashes, this.#held());
        this.#emit(r);
      }
    }
    for (const r of decoding) if (live.has(r)) this.#emit(r);
  }

  #emit(r: Running): void {
    r.seq.onToken(r.generated++);
    this.stats.generationTokens++;
    if (r.generated < r.seq.maxTokens) return;
    this.#running.splice(this.#running.indexOf(r), 1);
    r.seq.onDone();
  }
}
