// Chooses the channels for a model (docs/api.md#upstream-failures): by priority (higher first), weighted at random
// inside a priority, channels seen down tried after the others. Keeps each channel's `up` (its last
// request or health check succeeded; unknown = down) and its breaker in the cluster state.
import type { ClusterState } from "../cluster/types.js";
import type { Observer } from "../observability/observer.js";
import { startHealthChecks } from "./health-check.js";
import { createOpenAIChannel, type QueueHooks } from "./openai-channel.js";
import type { ChannelClient, ChannelEntry, UpstreamChannelConfig } from "./types.js";

export type { ChannelEntry };

/** Distinct callers whose 500s make a channel failing: one caller's content cannot trip it for all. */
const SERVER_ERROR_CALLERS = 2;

export interface RouterOptions {
  random?: () => number;
  now?: () => number;
  /** a reload: channels whose config did not change keep their entry (pool, gate, up) */
  previous?: ChannelEntry[];
  /** a client other than an OpenAI-compatible server's for a channel (the demo's echo), or undefined */
  clientFor?: (config: UpstreamChannelConfig) => ChannelClient | undefined;
  /** a channel disabled through FastGPT's AI Proxy API is never a candidate (docs/fastgpt.md#channels) */
  enabled?: (channel: string) => boolean;
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
      client: opts.clientFor?.(config) ?? createOpenAIChannel(config, queueHooks(observer, config.name)),
      up: undefined,
    };
  });
  const byModel = new Map<string, ChannelEntry[]>();
  for (const e of entries) for (const m of e.config.models) byModel.set(m, [...(byModel.get(m) ?? []), e]);

  const enabled = opts.enabled ?? (() => true);

  /** Candidates in the order to try them; empty when no enabled channel serves the model. */
  function candidates(model: string): ChannelEntry[] {
    const all = byModel.get(model);
    const list = all?.every((e) => enabled(e.config.name)) ? all : all?.filter((e) => enabled(e.config.name));
    if (!list || list.length <= 1) return list ?? [];
    const remaining = [...list];
    const ordered: ChannelEntry[] = [];
    while (remaining.length > 0) {
      const pick = pickNext(remaining, random);
      ordered.push(pick);
      remaining.splice(remaining.indexOf(pick), 1);
    }
    return ordered;
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

  return {
    entries,
    candidates,
    report,
    reportServerError,
    /** May a request go to this channel now (its breaker is closed, or this is the half-open probe)? */
    admit: (entry: ChannelEntry) => state.admitChannel(entry.config.name, now()),
    breaker: (entry: ChannelEntry) => state.breaker(entry.config.name),
    serves: (model: string) => byModel.has(model),
    close: async () => {
      health.stop();
      await Promise.all(entries.map((e) => e.client.close()));
    },
    /** Stops this router's health checks and closes the pools the `next` router no longer uses. */
    retire: async (next: ChannelEntry[]) => {
      health.stop();
      await Promise.all(entries.filter((e) => !next.includes(e)).map((e) => e.client.close()));
    },
  };
}

export type ChannelRouter = ReturnType<typeof createChannelRouter>;

/** The channel's queue, told to the metrics: its depth, and each call's wait by the caller's priority. */
function queueHooks(observer: Observer, channel: string): QueueHooks {
  return { onDepth: (depth) => observer.channelQueue(channel, depth), onWait: (ms, priority) => observer.queueWait(channel, priority, ms / 1000) };
}

function pickNext(list: ChannelEntry[], random: () => number): ChannelEntry {
  const up = list.filter((e) => e.up !== false);
  const pool = up.length > 0 ? up : list;
  const top = Math.max(...pool.map((e) => e.config.priority));
  const group = pool.filter((e) => e.config.priority === top);
  const total = group.reduce((s, e) => s + e.config.weight, 0);
  let r = random() * total;
  for (const e of group) {
    r -= e.config.weight;
    if (r < 0) return e;
  }
  return group[group.length - 1]!;
}
