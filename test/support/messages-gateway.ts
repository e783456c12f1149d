// The real gateway set up as a team would set it up for Claude Code (docs/claude-code.md), in front
// of a scripted Chat Completions model server (./scripted-upstream.ts) on 127.0.0.1: one private
// coding model, a small-context model, Claude's model names aliased to them, and keys with a QPM and
// a points budget. Every usage row the gateway writes is kept for the test to read.
import { createStore } from "../../src/store/index.js";
import type { Store, UsageRow } from "../../src/store/types.js";
import { startGateway, type StartedGateway } from "./gateway.js";
import { startScriptedUpstream, type ModelScript, type ScriptedUpstream } from "./scripted-upstream.js";

export const DEV_KEY = "sk-sluice-dev-key-0001";
/** two requests a minute */
export const PACED_KEY = "sk-sluice-paced-key-0001";
/** 0.05 points: one priced answer spends it */
export const THRIFTY_KEY = "sk-sluice-thrifty-key-0001";
export const GLOBAL_KEY = "sk-sluice-global-key-0001";

/** The private models: a coding model (priced per 1,000 tokens, `top_k` passed through) and a
 *  small-context one for the "prompt is too long" cases. */
export const CODER = "qwen3-coder";
export const TINY = "tiny";
export const TINY_CONTEXT = 2000;

export interface ConfigChanges {
  /** merged into the top level (routing, server, …) */
  extra?: Record<string, unknown>;
  /** merged into the coding model */
  coder?: Record<string, unknown>;
  /** replaces the small model's context */
  tinyContext?: number;
}

export function messagesConfig(upstreamUrl: string, changes: ConfigChanges = {}): Record<string, unknown> {
  return {
    channels: [{ name: "gpu", baseUrl: upstreamUrl, key: "channel-key-gpu-0001", models: [CODER, TINY], healthCheck: { intervalMs: 0 } }],
    llmModels: [
      { model: CODER, maxContext: 131072, maxResponse: 32000, inputPrice: 1, outputPrice: 2, passThrough: ["top_k"], ...changes.coder },
      { model: TINY, maxContext: changes.tinyContext ?? TINY_CONTEXT, maxResponse: 500 },
    ],
    // Claude Code's names (and its small/fast background model) reach the coding model; one exact
    // name reaches the small one (an exact alias wins over a glob)
    aliases: { "claude-*": CODER, "claude-tiny": TINY },
    apps: [{ id: "coder", model: CODER, models: [CODER, TINY] }],
    apiKeys: [
      { name: "dev", kind: "app", appId: "coder", key: DEV_KEY },
      { name: "paced", kind: "app", appId: "coder", key: PACED_KEY, qpm: 2 },
      { name: "thrifty", kind: "app", appId: "coder", key: THRIFTY_KEY, maxUsagePoints: 0.05 },
      { name: "ops", kind: "global", key: GLOBAL_KEY },
    ],
    ...changes.extra,
  };
}

export interface MessagesGateway {
  url: string;
  gw: StartedGateway;
  upstream: ScriptedUpstream;
  /** every usage row written, in order */
  rows: UsageRow[];
  close(): Promise<void>;
}

export interface MessagesGatewayOptions {
  /** the gateway's clock (quotas by time, key expiry, message threads) */
  clock?: () => number;
  /** the store to use (closed by close()); default a fresh in-memory one */
  store?: Store;
}

export async function startMessagesGateway(script: ModelScript, changes: ConfigChanges = {}, opts: MessagesGatewayOptions = {}): Promise<MessagesGateway> {
  const upstream = await startScriptedUpstream(script);
  const store = opts.store ?? createStore({ driver: "memory" });
  const rows: UsageRow[] = [];
  const record = store.recordUsage.bind(store);
  store.recordUsage = (row, scopes) => {
    rows.push(row);
    return record(row, scopes);
  };
  const gw = await startGateway(messagesConfig(upstream.url, changes), { store, clock: opts.clock });
  return {
    url: gw.url,
    gw,
    upstream,
    rows,
    async close() {
      await gw.close();
      await upstream.close();
      await store.close();
    },
  };
}

export interface Sent {
  path: string;
  query: string;
  /** x-stainless-retry-count */
  retry: string | null;
  version: string | null;
  /** the header the key came in (never its value) */
  keyHeader: "authorization" | "x-api-key" | null;
  status?: number;
  /** ms, performance.now() */
  at: number;
}

/** What a client sent and got, for counting retries: a `fetch` to give the client. */
export function countingFetch(): { fetch: typeof fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  const counting = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const headers = new Headers(init?.headers);
    const keyHeader = headers.has("x-api-key") ? "x-api-key" : headers.has("authorization") ? "authorization" : null;
    const entry: Sent = { path: url.pathname, query: url.search, retry: headers.get("x-stainless-retry-count"), version: headers.get("anthropic-version"), keyHeader, at: performance.now() };
    sent.push(entry);
    const res = await fetch(input, init);
    entry.status = res.status;
    return res;
  };
  return { fetch: counting as typeof fetch, sent };
}
