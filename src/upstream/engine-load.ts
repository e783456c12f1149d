// The engine's own load (docs/routing.md#load): where a channel sets `engineMetrics`, its Prometheus
// text is read every `intervalMs` — at most MAX_SCRAPE_BYTES, within the interval, never two at
// once — and the engine's running + waiting requests and KV cache use are kept on the channel's
// entry. The text is parsed as it arrives, in slices of about SLICE_MS with the event loop given
// back between them, and within PARSE_BUDGET_MS of parsing in all: the lines of the names read are
// searched for, and only they (of at most MAX_LINE_CHARS) reach the sample pattern. Lines it does not know, or cannot read, are skipped; a scrape
// that fails, runs over a bound or finds none of the engine's figures changes nothing, and a figure
// older than STALE_INTERVALS intervals is not used. What the engine's prefix cache can hold is read from the
// same text (./engine-cache.ts).
import { StringDecoder } from "node:string_decoder";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { request, type Dispatcher } from "undici";
import { CACHE_NAMES, cacheTokensOf } from "./engine-cache.js";
import type { ChannelEntry } from "./types.js";

const MAX_SCRAPE_BYTES = 4 * 1024 * 1024;
/** the longest the event loop is held by a scrape's parse before it is given back */
const SLICE_MS = 5;
/** the text parsed between two looks at the clock */
const PIECE_CHARS = 16 * 1024;
/** the parsing one scrape may cost in all; a real engine's text takes well under 5 ms */
const PARSE_BUDGET_MS = 50;
/** a longer line is no sample of the engine's: skipped to its end, never held whole */
const MAX_LINE_CHARS = 16 * 1024;
export const STALE_INTERVALS = 3;
/** the most requests an engine's figures say: more is no engine's (docs/routing.md#load) */
const MAX_QUEUE = 1e9;
/** vLLM's and SGLang's names (docs/routing.md#load): requests running, waiting, and KV cache use (0..1) */
const RUNNING = new Set(["vllm:num_requests_running", "sglang:num_running_reqs"]);
const WAITING = new Set(["vllm:num_requests_waiting", "sglang:num_queue_reqs"]);
const KV_USE = new Set(["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"]);
const NAMES = [...RUNNING, ...WAITING, ...KV_USE, ...CACHE_NAMES];
/** a line of one of the names read, from the end of the line before it */
const LINE_STARTS = NAMES.map((name) => `\n${name}`);
const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}\n]*)\})?[ \t]+(\S+)/;

export interface EngineFigures {
  /** running + waiting requests, summed over the engine's series */
  queue: number;
  /** the fullest KV cache among its series, 0..1 */
  kv: number;
  /** of `queue`: the requests waiting (not yet running) */
  waiting: number;
}

/** Reads a Prometheus text piece by piece: a line cut between two pieces is read whole. */
export class EngineMetricsReader {
  #queue = 0;
  #waiting = 0;
  #kv = 0;
  #found = false;
  #cacheTokens: number | undefined;
  /** the start of a line whose end has not come yet */
  #tail = "";
  /** within a line over MAX_LINE_CHARS: skipped up to its end */
  #skipping = false;

  /** Reads the whole lines of `piece` (after what is left of the last one). */
  feed(piece: string): void {
    let at = 0;
    if (this.#skipping || this.#tail !== "") {
      const end = piece.indexOf("\n");
      if (end < 0) return this.#skipping ? undefined : this.#keep(this.#tail + piece);
      if (!this.#skipping) this.#line(this.#tail + piece.slice(0, end));
      this.#skipping = false;
      this.#tail = "";
      at = end + 1;
    }
    const last = piece.lastIndexOf("\n");
    if (last >= at) {
      // the lines of the names read are searched for; no other line is looked at
      if (NAMES.some((name) => piece.startsWith(name, at))) this.#line(piece.slice(at, piece.indexOf("\n", at)));
      for (const name of LINE_STARTS) {
        for (let found = piece.indexOf(name, at); found >= 0 && found < last; found = piece.indexOf(name, found + 1)) {
          this.#line(piece.slice(found + 1, piece.indexOf("\n", found + 1)));
        }
      }
      at = last + 1;
    }
    this.#keep(piece.slice(at));
  }

  /** The figures read; undefined when the text held none of them. */
  end(): EngineFigures | undefined {
    const last = this.#tail;
    this.#tail = "";
    if (last !== "" && !this.#skipping) this.#line(last);
    return this.#found ? { queue: this.#queue, kv: this.#kv, waiting: this.#waiting } : undefined;
  }

  /** What the engine's prefix cache holds, in tokens, where the text said (read up to `end`). */
  get cacheTokens(): number | undefined {
    return this.#cacheTokens;
  }

  #keep(rest: string): void {
    if (rest.length > MAX_LINE_CHARS) {
      this.#tail = "";
      this.#skipping = true;
    } else this.#tail = rest;
  }

  #line(line: string): void {
    if (line.length > MAX_LINE_CHARS) return;
    const sample = SAMPLE.exec(line);
    if (!sample) return;
    const value = Number(sample[3]);
    if (!Number.isFinite(value) || value < 0) return;
    const name = sample[1]!;
    if (CACHE_NAMES.includes(name)) this.#cacheTokens = cacheTokensOf(name, sample[2] ?? "", value) ?? this.#cacheTokens;
    else if (RUNNING.has(name) || WAITING.has(name)) {
      // bounded: series summing past every number would make the load Infinity, its score NaN
      this.#queue = Math.min(this.#queue + value, MAX_QUEUE);
      if (WAITING.has(name)) this.#waiting = Math.min(this.#waiting + value, MAX_QUEUE);
      this.#found = true;
    } else if (KV_USE.has(name)) this.#kv = Math.max(this.#kv, Math.min(value, 1));
  }
}

/** The engine's figures in a whole Prometheus text, or undefined when it holds none of them. */
export function parseEngineMetrics(text: string): EngineFigures | undefined {
  const reader = new EngineMetricsReader();
  reader.feed(text);
  return reader.end();
}

/** What the engine's prefix cache holds in a whole Prometheus text, in tokens; undefined when it says not. */
export function parseCacheTokens(text: string): number | undefined {
  const reader = new EngineMetricsReader();
  reader.feed(text);
  reader.end();
  return reader.cacheTokens;
}

export function engineMetricsUrl(entry: ChannelEntry): string | undefined {
  const url = entry.config.engineMetrics?.url;
  if (url === undefined) return undefined;
  return url === "auto" ? `${entry.config.baseUrl.replace(/\/+$/, "")}/metrics` : url;
}

/** The engine's figures, read within `timeoutMs`, MAX_SCRAPE_BYTES and PARSE_BUDGET_MS; rejects otherwise. */
async function scrape(url: string, timeoutMs: number, key: string | undefined, dispatcher: Dispatcher | undefined): Promise<{ figures: EngineFigures | undefined; cacheTokens: number | undefined }> {
  const headers = key ? { authorization: `Bearer ${key}` } : {};
  const res = await request(url, { method: "GET", headers, signal: AbortSignal.timeout(timeoutMs), ...(dispatcher && { dispatcher }) });
  if (res.statusCode !== 200) {
    res.body.resume();
    throw new Error(`status ${res.statusCode}`);
  }
  // undici answers destroy() with an `error` event: it must find a listener
  res.body.on("error", () => {});
  if (Number(res.headers["content-length"] ?? 0) > MAX_SCRAPE_BYTES) {
    res.body.destroy();
    throw new Error("too large");
  }
  const reader = new EngineMetricsReader();
  const decoder = new StringDecoder("utf8");
  let bytes = 0;
  let parsing = 0;
  let slice = performance.now();
  try {
    for await (const part of res.body) {
      bytes += (part as Buffer).length;
      if (bytes > MAX_SCRAPE_BYTES) throw new Error("too large");
      const text = decoder.write(part as Buffer);
      for (let at = 0; at < text.length; at += PIECE_CHARS) {
        const started = performance.now();
        reader.feed(text.slice(at, at + PIECE_CHARS));
        parsing += performance.now() - started;
        if (parsing > PARSE_BUDGET_MS) throw new Error("too slow to parse");
        // pieces already received come one after another without a turn of the event loop
        if (performance.now() - slice > SLICE_MS) {
          await yieldToLoop();
          slice = performance.now();
        }
      }
    }
  } catch (err) {
    res.body.destroy();
    throw err;
  }
  reader.feed(decoder.end());
  const figures = reader.end();
  return { figures, cacheTokens: reader.cacheTokens };
}

/** `dispatcher`: the address guard's (docs/configuration.md#top-level `allowLinkLocalChannels`); absent: undici's global one. */
export function startEngineScrapes(entries: ChannelEntry[], now: () => number, onFigures: (entry: ChannelEntry) => void, dispatcher?: Dispatcher): { stop(): void } {
  const timers: NodeJS.Timeout[] = [];
  for (const entry of entries) {
    const url = engineMetricsUrl(entry);
    if (url === undefined) continue;
    const { intervalMs } = entry.config.engineMetrics!;
    // the channel key goes only to the channel's own server
    const key = entry.config.engineMetrics!.url === "auto" && entry.config.key ? entry.config.key : undefined;
    let busy = false;
    const run = () => {
      if (busy) return;
      busy = true;
      scrape(url, intervalMs, key, dispatcher)
        .then(({ figures, cacheTokens }) => {
          entry.engineCacheTokens = cacheTokens ?? entry.engineCacheTokens;
          if (!figures) return;
          // this instance's batch lines the engine was running then (docs/routing.md#load)
          entry.engine = { ...figures, at: now(), lines: entry.client.load?.().preemptible ?? 0 };
          onFigures(entry);
        })
        .catch(() => {})
        .finally(() => (busy = false));
    };
    run();
    const timer = setInterval(run, intervalMs);
    timer.unref();
    timers.push(timer);
  }
  return { stop: () => timers.forEach(clearInterval) };
}
