// Chooses the channels for a model (docs/api.md#upstream-failures): by priority (higher first), and
// inside a priority by what each replica was sent and its load, sessions kept where they went
// (./prefix-score.ts, docs/routing.md#prefix), or by session alone (./pick.ts); channels seen down
// tried after the others. Keeps each channel's `up` (its last request or health
// check succeeded; unknown = down), its breaker in the cluster state, and its engine's load.
import type { ClusterState } from "../cluster/types.js";
import type { Observer } from "../observability/observer.js";
import type { AddressGuard } from "./address-guard.js";
import { STALE_INTERVALS, startEngineScrapes } from "./engine-load.js";
import { startHealthChecks } from "./health-check.js";
import { createOpenAIChannel, type QueueHooks } from "./openai-channel.js";
import { orderChannels, type ChannelView } from "./pick.js";
import { hashPrefix, PrefixIndexes, type PrefixParts } from "./prefix-index.js";
import { pickByPrefix, type Imbalance, type PrefixWeights } from "./prefix-score.js";
import type { AttemptTaps } from "./attempt.js";
import { freeFor, type HeadroomRule, type HeadroomSlot } from "./headroom.js";
import type { ChannelLayer } from "./layers.js";
import type { ChannelClient, ChannelEntry, UpstreamChannelConfig } from "./types.js";

export type { ChannelEntry };

/** Distinct callers whose 500s make a channel failing: one caller's content cannot trip it for all. */
const SERVER_ERROR_CALLERS = 2;
/** An engine whose KV cache is this full counts as at spill load (docs/routing.md#spill). */
const KV_FULL = 0.95;

export interface RouterOptions {
  random?: () => number;
  now?: () => number;
  /** a reload: channels whose config did not change keep their entry (pool, gate, up) */
  previous?: ChannelEntry[];
  /** a client other than an OpenAI-compatible server's for a channel (the demo's echo), or undefined */
  clientFor?: (config: UpstreamChannelConfig) => ChannelClient | undefined;
  /** a channel disabled through FastGPT's AI Proxy API is never a candidate (docs/fastgpt.md#channels) */
  enabled?: (channel: string) => boolean;
  /** `routing.affinity`, `routing.spillLoad`, `routing.prefix` and `routing.imbalance` (docs/configuration.md#routing) */
  affinity?: "prefix" | "session" | "off";
  spillLoad?: number;
  /** where channels may connect (docs/configuration.md#top-level `allowLinkLocalChannels`); absent: anywhere */
  guard?: AddressGuard;
  /** layers for every OpenAI-compatible channel (a header on every upstream attempt: docs/architecture.md#channel-layers) */
  layers?: readonly ChannelLayer[];
  prefix?: PrefixWeights;
  imbalance?: Imbalance;
  /** the prefix indexes and sessions of the router this one replaces (a reload keeps them) */
  prefixes?: PrefixIndexes;
}

/** Default weights and guard (src/config/schema.ts has the configured ones). */
const PREFIX_WEIGHTS: PrefixWeights = { match: 3, load: 2, kv: 1 };
const IMBALANCE: Imbalance = { ratio: 2, min: 4 };
/** A new prefix's channel is the rendezvous of its first chunks, up to this many (docs/routing.md#prefix). */
const TIE_CHUNKS = 4;
/** The time constant of the requests a channel was routed lately (docs/routing.md#prefix). */
const RECENT_MS = 10_000;

/** How often this instance tells the others its calls in flight per channel (docs/routing.md#load). */
const LOAD_SHARE_MS = 500;

/** This instance's calls on the channel: holding a connection or waiting for one, less the batch
 *  lines that give their slot to an interactive call (docs/routing.md#load). */
function localLoad(e: ChannelEntry): number {
  const local = e.client.load?.();
  return local ? local.active + local.queued - (local.preemptible ?? 0) : 0;
}

/** The engine's figures are used while younger than STALE_INTERVALS scrape intervals. */
function freshEngine(e: ChannelEntry, at: number): { queue: number; kv: number; waiting?: number; lines?: number } | undefined {
  const interval = e.config.engineMetrics?.intervalMs;
  return e.engine && interval !== undefined && at - e.engine.at <= STALE_INTERVALS * interval ? e.engine : undefined;
}

export function createChannelRouter(channels: UpstreamChannelConfig[], observer: Observer, state: ClusterState, opts: RouterOptions = {}) {
  const random = opts.random ?? Math.random;
  const now = opts.now ?? Date.now;
  const kept = new Map((opts.previous ?? []).map((e) => [e.config.name, e]));
  const entries = channels.map<ChannelEntry>((config) => {
    const same = kept.get(config.name);
    if (same && JSON.stringify(same.config) === JSON.stringify(config)) return same;
    return {
      config,
      client: opts.clientFor?.(config) ?? createOpenAIChannel(config, queueHooks(observer, config.name), opts.guard, opts.layers),
      up: undefined,
    };
  });
  const byModel = new Map<string, ChannelEntry[]>();
  for (const e of entries) for (const m of e.config.models) byModel.set(m, [...(byModel.get(m) ?? []), e]);

  const enabled = opts.enabled ?? (() => true);

  /** A channel's load (docs/routing.md#load): its calls in flight, or its engine's running +
   *  waiting when that is more and fresh. */
  function loadOf(e: ChannelEntry): number {
    const inflight = localLoad(e) + (othersLoad.get(e.config.name) ?? 0);
    const engine = freshEngine(e, now());
    // the engine ran this instance's preemptible lines too (counted as the figures came, not now:
    // the lines change between scrapes): they are not load for an interactive call
    return engine ? Math.max(inflight, engine.queue - (engine.lines ?? 0)) : inflight;
  }
  const view: ChannelView = {
    load: loadOf,
    kvFull: (e) => (freshEngine(e, now())?.kv ?? 0) >= KV_FULL,
    kv: (e) => freshEngine(e, now())?.kv ?? 0,
    // full: no room for one more call now (its `concurrency`, else its connections)
    gateFull: (e) => (e.client.hasRoom ? !e.client.hasRoom() : (e.client.load?.().active ?? 0) >= e.config.connections),
    breakerOpen: (e) => {
      const b = state.breaker(e.config.name);
      return b.phase === "open" && b.retryAt > now();
    },
  };
  const pickOptions = { spillLoad: opts.spillLoad ?? 2, random };
  // the other instances' calls in flight (with a cluster state), told every LOAD_SHARE_MS
  let othersLoad = new Map<string, number>();
  const shareLoads = () => {
    const own = Object.fromEntries(entries.map((e) => [e.config.name, localLoad(e)]));
    state.shareChannelLoads(own, now()).then(
      (others) => {
        othersLoad = others;
        for (const e of entries) observer.channelLoad(e.config.name, loadOf(e));
      },
      () => {},
    );
  };
  const sharing = setInterval(shareLoads, LOAD_SHARE_MS);
  sharing.unref();

  const mode = opts.affinity ?? "prefix";
  const prefixes = opts.prefixes ?? new PrefixIndexes();
  prefixes.keep(new Set(entries.map((e) => e.config.name)));
  const prefixOptions = { weights: opts.prefix ?? PREFIX_WEIGHTS, imbalance: opts.imbalance ?? IMBALANCE, random };
  const indexOf = (e: ChannelEntry) => prefixes.of(e.config.name, e.engineCacheTokens ?? e.config.cacheTokens);
  // requests routed to each channel lately, decayed with RECENT_MS
  const recent = new Map<string, { n: number; at: number }>();
  const recentOf = (e: ChannelEntry, at = now()) => {
    const r = recent.get(e.config.name);
    return r ? r.n * Math.exp((r.at - at) / RECENT_MS) : 0;
  };
  const routed = (e: ChannelEntry) => {
    const at = now();
    recent.set(e.config.name, { n: recentOf(e, at) + 1, at });
  };

  /** The first channel by prefix (./prefix-score.ts): the session remembered, the chosen channel's index told the prefix. */
  const byPrefix = (model: string, key: string | undefined, parts: PrefixParts | undefined) => (group: ChannelEntry[]) => {
    const hashes = parts ? hashPrefix(parts) : [];
    const session = key === undefined ? undefined : `${model}\u0000${key}`;
    const ownName = session === undefined ? undefined : prefixes.sessions.get(session);
    const own = ownName === undefined ? undefined : group.find((e) => e.config.name === ownName);
    const tieKey = hashes.length > 0 ? `prefix:${hashes[Math.min(hashes.length, TIE_CHUNKS) - 1]}` : key;
    const choice = pickByPrefix(group, view, { matched: (e) => indexOf(e).match(hashes), chunks: hashes.length, own, tieKey, recent: hashes.length > 0 ? recentOf : undefined }, prefixOptions);
    routed(choice.first);
    if (session !== undefined && !own) prefixes.sessions.set(session, choice.first.config.name);
    if (hashes.length > 0) {
      const index = indexOf(choice.first);
      index.record(hashes);
      observer.prefixMatch(model, choice.match);
      observer.prefixIndexEntries(choice.first.config.name, index.size);
    }
    return choice;
  };

  /** Candidates in the order to try them; empty when no channel serves the model. `affinity`: makes
   *  the request's key (a digest), which keeps its session on one channel while routing.affinity is
   *  on; `prefix`: the request's prefix (docs/routing.md#prefix); both asked for only when there is a
   *  choice to make, and neither among channels that are routers themselves. */
  function candidates(model: string, affinity?: () => string | undefined, prefix?: () => PrefixParts, taps?: Pick<AttemptTaps, "routed">): ChannelEntry[] {
    const all = byModel.get(model);
    const list = all?.every((e) => enabled(e.config.name)) ? all : all?.filter((e) => enabled(e.config.name));
    if (!list || list.length <= 1) return list ?? [];
    const picks = mode !== "off" && !list.some((e) => e.config.upstreamRouter);
    const key = picks ? affinity?.() : undefined;
    const choose = picks && mode === "prefix" && (key !== undefined || prefix) ? byPrefix(model, key, prefix?.()) : undefined;
    const { ordered, decision } = orderChannels(list, view, { ...pickOptions, affinity: key }, choose);
    observer.routeDecision(model, decision);
    taps?.routed(model, decision);
    for (const e of list) observer.channelLoad(e.config.name, loadOf(e));
    return ordered;
  }

  /** The channels of `model` that may take one more batch line now, and how many (./headroom.ts). */
  function headroom(model: string, rule: HeadroomRule): HeadroomSlot[] {
    const slots: HeadroomSlot[] = [];
    for (const e of byModel.get(model) ?? []) {
      if (!enabled(e.config.name)) continue;
      const engine = freshEngine(e, now());
      const channel = { name: e.config.name, concurrency: e.config.concurrency, breakerOpen: e.up === false || view.breakerOpen(e), engineWaiting: engine?.waiting, gate: e.client.gate };
      const free = freeFor(channel, rule);
      if (free > 0) slots.push({ channel: e.config.name, free });
    }
    return slots;
  }

  /** The outcome of a request or health check: `up`, the breaker, and (on failure) the last error. */
  function report(entry: ChannelEntry, ok: boolean, outcome = "ok", retryAfterMs?: number): void {
    const at = now();
    entry.accessedAt = at;
    if (ok) entry.serverErrorCallers?.clear();
    state.channelResult(entry.config.name, ok, at, retryAfterMs);
    if (!ok) entry.lastError = { at, outcome };
    if (entry.up === ok) return;
    entry.up = ok;
    observer.channelState(entry.config.name, ok);
  }

  /**
   * A plain 500 may be the request's own doing (its content made the model fail), so it counts
   * against the channel only once a second caller meets one too, or while health checks fail
   * (docs/api.md#upstream-failures).
   */
  function reportServerError(entry: ChannelEntry, caller: string, retryAfterMs?: number): void {
    const callers = (entry.serverErrorCallers ??= new Set());
    if (callers.size < 64) callers.add(caller);
    entry.lastError = { at: now(), outcome: "http_error" };
    if (callers.size >= SERVER_ERROR_CALLERS || entry.healthFailing) report(entry, false, "http_error", retryAfterMs);
  }

  const health = startHealthChecks(entries, { report });
  const scrapes = startEngineScrapes(entries, now, (e) => observer.channelLoad(e.config.name, loadOf(e)), opts.guard?.dispatcher);

  return {
    entries,
    candidates,
    headroom,
    report,
    reportServerError,
    /** May a request go to this channel now (its breaker is closed, or this is the half-open probe)? */
    admit: (entry: ChannelEntry) => state.admitChannel(entry.config.name, now()),
    breaker: (entry: ChannelEntry) => state.breaker(entry.config.name),
    serves: (model: string) => byModel.has(model),
    load: loadOf,
    prefixes,
    close: async () => {
      health.stop();
      scrapes.stop();
      clearInterval(sharing);
      await Promise.all(entries.map((e) => e.client.close()));
    },
    /** Stops this router's health checks and closes the pools the `next` router no longer uses. */
    retire: async (next: ChannelEntry[]) => {
      health.stop();
      scrapes.stop();
      clearInterval(sharing);
      await Promise.all(entries.filter((e) => !next.includes(e)).map((e) => e.client.close()));
    },
  };
}

export type ChannelRouter = ReturnType<typeof createChannelRouter>;

/** The channel's queue, told to the metrics: its depth, and each call's wait by the caller's priority. */
function queueHooks(observer: Observer, channel: string): QueueHooks {
  return { onDepth: (depth) => observer.channelQueue(channel, depth), onWait: (ms, priority) => observer.queueWait(channel, priority, ms / 1000) };
}
