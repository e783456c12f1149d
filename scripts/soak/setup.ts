// What the soak's processes agree on: the model, the key, the tokenizer both sides count with, the
// faults the upstreams inject, and the gateway's config for two channels serving one model.
import type { TokenizerName } from "../../src/tokens/counter.js";

export const SOAK_MODEL = "soak-model";
export const SOAK_KEY = "sk-soak-app-key-123456";
/** The model's configured tokenizer: the upstreams count what they produce with it, so that a
 *  counted (cut) answer and an upstream's own count are the same number. */
export const SOAK_TOKENIZER: TokenizerName = "cl100k_base";
export const CHANNELS = ["a", "b"] as const;
export type ChannelName = (typeof CHANNELS)[number];
/** Each request's id leads its user message, so an upstream attempt can be matched to it; the same
 *  id is the request's chatId, so its usage row can be too. */
export const ID_PREFIX = "soak-";
export const ID_PATTERN = /^soak-(\d+) /;
export const MAX_ATTEMPTS = 3;

/** What an upstream does to each attempt, chosen at random per attempt. */
export interface FaultProfile {
  /** share of attempts answered 500, reset before headers, or 429 with Retry-After (a third each) */
  failBeforeHeaders: number;
  /** share of streamed answers cut (connection closed) after 1..n-1 content chunks */
  cutMidStream: number;
  /** content chunks per streamed answer (1-3 words each), and the pause before each after the first */
  chunks: [number, number];
  chunkMs: [number, number];
  /** time to a whole (non-stream) answer */
  wholeMs: [number, number];
}

export const DEFAULT_FAULTS: FaultProfile = {
  failBeforeHeaders: 0.1,
  cutMidStream: 0.05,
  chunks: [20, 80],
  chunkMs: [60, 180],
  wholeMs: [300, 2000],
};

export function gatewayConfig(upstreams: Record<ChannelName, string>, dbPath: string, logPath: string) {
  return {
    // warnings and errors only (4xx/5xx requests), to a file read for the report's diagnosis
    server: { log: { level: "warn", destination: logPath }, shutdownTimeoutMs: 30_000 },
    store: { driver: "sqlite", path: dbPath },
    channels: CHANNELS.map((name) => ({
      name,
      baseUrl: upstreams[name],
      key: `soak-channel-${name}`,
      models: [SOAK_MODEL],
      // every stream may land on one channel while the other's breaker is open
      connections: 1200,
      healthCheck: { intervalMs: 5_000 },
    })),
    llmModels: [{ model: SOAK_MODEL, name: "Soak", maxContext: 8000, maxResponse: 1000, tokenizer: SOAK_TOKENIZER, charsPointsPrice: 1 }],
    apps: [{ id: "soak", model: SOAK_MODEL, history: 0 }],
    apiKeys: [{ name: "soak", kind: "app", appId: "soak", key: SOAK_KEY }],
    // Injected failures are independent draws, so at hundreds of attempts a second a run of five on
    // one channel happens by chance now and then: a short cooldown keeps such an opening brief.
    routing: { maxAttempts: MAX_ATTEMPTS, breaker: { failures: 5, cooldownMs: 2_000 } },
  };
}

export const between = ([lo, hi]: [number, number]) => lo + Math.floor(Math.random() * (hi - lo + 1));
