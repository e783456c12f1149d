// The engine's own load (docs/routing.md#load): where a channel sets `engineMetrics`, its Prometheus
// text is read every `intervalMs` — at most MAX_SCRAPE_BYTES, within the interval, never two at
// once — and the engine's running + waiting requests and KV cache use are kept on the channel's
// entry. Lines it does not know, or cannot read, are skipped; a scrape that fails or finds none of
// the engine's figures changes nothing, and a figure older than STALE_INTERVALS intervals is not used.
import { request } from "undici";
import { parseCacheTokens } from "./engine-cache.js";
import type { ChannelEntry } from "./types.js";

const MAX_SCRAPE_BYTES = 4 * 1024 * 1024;
export const STALE_INTERVALS = 3;
/** vLLM's and SGLang's names (docs/routing.md#load): requests running, waiting, and KV cache use (0..1) */
const RUNNING = new Set(["vllm:num_requests_running", "sglang:num_running_reqs"]);
const WAITING = new Set(["vllm:num_requests_waiting", "sglang:num_queue_reqs"]);
const KV_USE = new Set(["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"]);
const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{[^}\n]*\})?[ \t]+(\S+)/;

export interface EngineFigures {
  /** running + waiting requests, summed over the engine's series */
  queue: number;
  /** the fullest KV cache among its series, 0..1 */
  kv: number;
}

/** The engine's figures in a Prometheus text, or undefined when it holds none of them. */
export function parseEngineMetrics(text: string): EngineFigures | undefined {
  let queue = 0;
  let kv = 0;
  let found = false;
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) continue;
    const value = Number(sample[2]);
    if (!Number.isFinite(value) || value < 0) continue;
    const name = sample[1]!;
    if (RUNNING.has(name) || WAITING.has(name)) {
      queue += value;
      found = true;
    } else if (KV_USE.has(name)) kv = Math.max(kv, value);
  }
  return found ? { queue, kv } : undefined;
}

export function engineMetricsUrl(entry: ChannelEntry): string | undefined {
  const url = entry.config.engineMetrics?.url;
  if (url === undefined) return undefined;
  return url === "auto" ? `${entry.config.baseUrl.replace(/\/+$/, "")}/metrics` : url;
}

/** Reads the text within `timeoutMs` and MAX_SCRAPE_BYTES; rejects otherwise. */
async function scrape(url: string, timeoutMs: number, key: string | undefined): Promise<string> {
  const res = await request(url, { method: "GET", headers: key ? { authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
  if (res.statusCode !== 200) {
    res.body.resume();
    throw new Error(`status ${res.statusCode}`);
  }
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const part of res.body) {
    bytes += (part as Buffer).length;
    if (bytes > MAX_SCRAPE_BYTES) {
      res.body.destroy();
      throw new Error("too large");
    }
    parts.push(part as Buffer);
  }
  return Buffer.concat(parts).toString("utf8");
}

export function startEngineScrapes(entries: ChannelEntry[], now: () => number, onFigures: (entry: ChannelEntry) => void): { stop(): void } {
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
      scrape(url, intervalMs, key)
        .then((text) => {
          entry.engineCacheTokens = parseCacheTokens(text) ?? entry.engineCacheTokens;
          const figures = parseEngineMetrics(text);
          if (!figures) return;
          entry.engine = { ...figures, at: now() };
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
