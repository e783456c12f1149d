// The in-process ClusterState, for a single gateway instance: rate windows, budget ledgers,
// breakers and key-change listeners live in this process's memory (bounded caches keyed by
// configured names).
import { LRUCache } from "lru-cache";
import { Breaker, type BreakerSettings } from "./breaker.js";
import { RateWindow } from "./rate-window.js";
import type { AdmitResult, ClusterState, KeyChange } from "./types.js";

const MAX_SCOPES = 100_000;
// Bounded by a size of one per scope, not by `max`: a `max` makes lru-cache allocate storage for all
// of them up front, 15-20 ms of start-up per cache (docs/performance.md#start-up).
const BY_SCOPE = { maxSize: MAX_SCOPES, sizeCalculation: () => 1 };
/** points are decimals: sums of 0.05 must not refuse the request that exactly fills a budget */
const EPSILON = 1e-9;

interface Ledger {
  /** settled points: the store's count when loaded, plus what settled since */
  spent: number;
  /** points held by requests in flight */
  held: number;
}

export function createMemoryClusterState(breakerOptions: BreakerSettings): ClusterState {
  const windows = new LRUCache<string, RateWindow>(BY_SCOPE);
  const ledgers = new LRUCache<string, Ledger>(BY_SCOPE);
  // a minute's token ledgers: those of past minutes are the least recently used, evicted first
  const minutes = new LRUCache<string, Ledger>(BY_SCOPE);
  const minuteOf = (scope: string) => minutes.get(scope) ?? minutes.set(scope, { spent: 0, held: 0 }).get(scope)!;
  const loading = new Map<string, Promise<void>>();
  const breakers = new Map<string, Breaker>();
  const keyListeners = new Set<(change: KeyChange) => void>();
  /** calls in flight per capped scope; a scope leaves when its last call ends */
  const slots = new Map<string, number>();
  const breakerOf = (channel: string) => {
    let b = breakers.get(channel);
    if (!b) breakers.set(channel, (b = new Breaker(breakerOptions)));
    return b;
  };

  /** Loads a scope's settled points once; concurrent callers share the load. */
  function load(scope: string, spent: (scope: string) => Promise<number>): Promise<void> {
    if (ledgers.has(scope)) return Promise.resolve();
    let pending = loading.get(scope);
    if (!pending) {
      pending = spent(scope)
        .then((points) => void (ledgers.has(scope) || ledgers.set(scope, { spent: points, held: 0 })))
        .finally(() => loading.delete(scope));
      loading.set(scope, pending);
    }
    return pending;
  }

  return {
    async admit(holds, points, rates, now, spent): Promise<AdmitResult> {
      const range = typeof points === "number" ? { min: points, max: points } : points;
      const ranges = { points: range, tokens: range.tokens ?? { min: 0, max: 0 } };
      // known scopes (the usual case) take no turn of the event loop
      if (holds.some((h) => !h.tokens && !ledgers.has(h.scope))) await Promise.all(holds.map((h) => (h.tokens ? undefined : load(h.scope, spent))));
      // from here on synchronous: every check, then every change, is one step in this process
      const room = { points: Number.POSITIVE_INFINITY, tokens: Number.POSITIVE_INFINITY };
      const held = holds.map((h) => (h.tokens ? minuteOf(h.scope) : ledgers.get(h.scope)!));
      for (let i = 0; i < holds.length; i++) {
        const [h, l] = [holds[i]!, held[i]!];
        const unit = h.tokens ? "tokens" : "points";
        if (l.spent >= h.max || l.spent + l.held + ranges[unit].min > h.max + EPSILON) return { ok: false, refused: "budget", scope: h.scope };
        room[unit] = Math.min(room[unit], h.max - l.spent - l.held);
      }
      const rateWindows = rates.map((r) => {
        let window = windows.get(r.scope);
        if (!window) windows.set(r.scope, (window = new RateWindow()));
        return window;
      });
      for (let i = 0; i < rates.length; i++) {
        const retryAfterMs = rateWindows[i]!.wait(now, rates[i]!.limit);
        if (retryAfterMs > 0) return { ok: false, refused: "rate", scope: rates[i]!.scope, retryAfterMs };
      }
      const hold = { points: servable(ranges.points, room.points), tokens: servable(ranges.tokens, room.tokens) };
      holds.forEach((h, i) => (held[i]!.held += hold[h.tokens ? "tokens" : "points"]));
      for (const window of rateWindows) window.count(now);
      return { ok: true, held: hold.points, heldTokens: hold.tokens };
    },

    async settle(scopes, held, actual, tokens) {
      for (const scope of scopes) {
        const l = (tokens ? minutes : ledgers).get(scope);
        if (!l) continue;
        l.held = Math.max(0, l.held - held);
        l.spent += actual;
      }
    },

    async takeSlots(limits) {
      for (const l of limits) if ((slots.get(l.scope) ?? 0) >= l.max) return { ok: false, scope: l.scope };
      for (const l of limits) slots.set(l.scope, (slots.get(l.scope) ?? 0) + 1);
      return { ok: true };
    },
    async freeSlots(scopes) {
      for (const scope of scopes) {
        const left = (slots.get(scope) ?? 0) - 1;
        if (left > 0) slots.set(scope, left);
        else slots.delete(scope);
      }
    },

    admitChannel: (channel, now) => breakerOf(channel).admit(now),
    channelResult: (channel, ok, now, retryAfterMs) => breakerOf(channel).record(ok, now, retryAfterMs),
    breaker: (channel) => breakerOf(channel).view,
    shareChannelLoads: async () => new Map(),

    // one instance: a change reaches every listener before the publish resolves
    async publishKeyChange(change) {
      for (const listener of keyListeners) listener(change);
    },
    onKeyChange(listener) {
      keyListeners.add(listener);
      return () => void keyListeners.delete(listener);
    },

    // no other instance to tell, nothing to reach or close
    publishReload: async () => {},
    onReload: () => () => {},
    publishChannelChange: async () => {},
    onChannelChange: () => () => {},
    ping: async () => {},
    reachable: async () => {},
    close: async () => {},
  };
}

/** Serve until spent: the range's most where the budgets have room for it, else their room, never
 *  below the least (docs/api.md#budgets). */
function servable(range: { min: number; max: number }, room: number): number {
  return Math.min(range.max, Math.max(range.min, room));
}
