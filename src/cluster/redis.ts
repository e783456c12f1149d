// The ClusterState of several instances (`cluster.redisUrl`, docs/operations.md#redis): rate windows, budget
// reservations, breakers, key changes and reload notices live in one Redis, under `sluice:` (plus an
// optional prefix), every key expiring. Each check-and-change is one Lua step (redis-scripts.ts);
// changes reach the other instances by pub/sub on a second connection. Redis unreachable: calls fail
// at once (no offline queue, a command timeout) with 503 store_unavailable; the connection comes back
// by itself, and then this instance rewrites its holds and hears every key change again.
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import type { Redis as RedisClient, RedisOptions } from "ioredis";
import { GatewayError } from "../http/errors.js";
import type { BreakerSettings } from "./breaker.js";
import { createSharedBreakers } from "./redis-breakers.js";
import { createSharedBudgets } from "./redis-budgets.js";
import { defineScripts } from "./redis-scripts.js";
import { createSharedSlots } from "./redis-slots.js";
import type { ClusterState, KeyChange } from "./types.js";

export interface RedisClusterOptions {
  /** redis:// or rediss:// (may hold a password: never logged) */
  url: string;
  /** more namespace after `sluice:`, e.g. `staging:` */
  prefix?: string;
  breaker: BreakerSettings;
  log?: (message: string) => void;
  /** a concurrency slot not renewed (its instance died) frees after this (default 30 s) */
  slotTtlMs?: number;
}

const CLIENT_OPTIONS: RedisOptions = {
  // fail at once while disconnected, and never hang on a stalled server
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: 1_000,
  connectTimeout: 1_000,
  // a script half-answered before a disconnect is not sent twice (holds are repaired instead)
  autoResendUnfulfilledCommands: false,
  retryStrategy: (times) => Math.min(100 * times, 500),
};
/** at start, calls wait this long for the first connection */
const FIRST_CONNECT_MS = 2_000;
const PROBE_MS = 500;

export function createRedisClusterState(opts: RedisClusterOptions): ClusterState {
  const log = opts.log ?? ((message: string) => console.error(`[sluice] ${message}`));
  const ns = `sluice:${opts.prefix ?? ""}`;
  const topics = { keys: `${ns}keys`, reload: `${ns}reload`, breakers: `${ns}breakers`, channels: `${ns}channels` };
  const instance = randomUUID();
  const startedAt = Date.now();

  // 1. Connections: commands, and a subscriber re-subscribed by hand on every connect.
  // ioredis is loaded when a cluster is configured: a single instance starts without it (docs/operations.md#start)
  const { Redis } = createRequire(import.meta.url)("ioredis") as { Redis: typeof RedisClient };
  const redis = new Redis(opts.url, CLIENT_OPTIONS);
  const sub = new Redis(opts.url, { ...CLIENT_OPTIONS, autoResubscribe: false });
  const scripts = defineScripts(redis);
  let closed = false;
  let subscribed = false;
  let failing = false;
  /** the current outage was logged */
  let reported = false;
  const shared = () => redis.status === "ready" && subscribed && !failing;
  let wasShared = false;
  let firstShared: () => void = () => {};
  const firstSharedSeen = new Promise<void>((resolve) => (firstShared = resolve));
  const noteUp = () => {
    if (!shared()) return;
    wasShared = true;
    firstShared();
  };
  const breakers = createSharedBreakers({
    scripts,
    settings: opts.breaker,
    instance,
    key: (kind, channel) => `${ns}${kind}:${channel}`,
    topic: topics.breakers,
    shared,
  });

  /** Runs a Redis call; any failure of Redis is the client's 503 (the call's own errors pass). */
  async function call<T>(run: () => Promise<T>): Promise<T> {
    if (redis.status !== "ready") await firstConnect();
    try {
      const result = await run();
      failing = false;
      return result;
    } catch (err) {
      noteFailure();
      throw storeUnavailable(err);
    }
  }
  // A stalled Redis keeps its connection "ready": after a failed call this instance counts as out of
  // reach until a call or ping is answered again.
  function noteFailure(): void {
    if (failing || closed) return;
    failing = true;
    const probe = () => {
      if (!closed) redis.ping().then(() => (failing = false), () => setTimeout(probe, PROBE_MS).unref());
    };
    setTimeout(probe, PROBE_MS).unref();
  }
  /** Right after start, waits a little for both connections; later, refuses at once. */
  function firstConnect(): Promise<void> {
    const left = startedAt + FIRST_CONNECT_MS - Date.now();
    if (closed || wasShared || left <= 0) return Promise.reject(storeUnavailable());
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(storeUnavailable()), left)));
    return Promise.race([firstSharedSeen, late]).finally(() => clearTimeout(timer));
  }

  const budgets = createSharedBudgets({
    redis,
    scripts,
    instance,
    instancesKey: `${ns}instances`,
    key: (scope) => `${ns}budget:${scope}`,
    rateKey: (scope) => `${ns}rate:${scope}`,
    call,
    unavailable: storeUnavailable,
  });

  const slots = createSharedSlots({ redis, instance, key: (scope) => `${ns}slots:${scope}`, ttlMs: opts.slotTtlMs ?? 30_000, call });

  // 2. Notices: key changes and reloads of other instances, breaker views.
  const keyListeners = new Set<(change: KeyChange) => void>();
  const reloadListeners = new Set<() => void>();
  const channelListeners = new Set<() => void>();
  let missedPublish = false;
  const tellKeys = (change: KeyChange) => keyListeners.forEach((listener) => listener(change));
  async function publish(topic: string, message: object): Promise<void> {
    try {
      await call(() => redis.publish(topic, JSON.stringify({ from: instance, ...message })));
    } catch {
      missedPublish = true; // told to every instance as a resync once Redis is back
    }
  }
  sub.on("message", (topic: string, text: string) => {
    try {
      if (topic === topics.breakers) return breakers.heard(text);
      const message = JSON.parse(text) as { from: string; change?: unknown };
      if (message.from === instance) return;
      const change = topic === topics.keys ? readKeyChange(message.change) : undefined;
      if (change) tellKeys(change);
      if (topic === topics.reload) reloadListeners.forEach((listener) => listener());
      if (topic === topics.channels) channelListeners.forEach((listener) => listener());
    } catch {
      // not one of ours: ignored
    }
  });

  // 3. Connection events: an outage is logged once; coming back repairs what it may have lost.
  redis.on("ready", () => {
    if (reported) log("Redis reached again: shared counters back");
    reported = false;
    failing = false;
    noteUp();
    budgets.connected();
    if (missedPublish) {
      missedPublish = false;
      void publish(topics.keys, { change: { change: "resync" } });
      void publish(topics.channels, {});
    }
  });
  sub.on("ready", () => {
    sub.subscribe(...Object.values(topics)).then(
      () => {
        // changes published while this instance was not listening (before the first subscription
        // too: the created keys may have been read before it) are read from the store again
        subscribed = true;
        noteUp();
        tellKeys({ change: "resync" });
        channelListeners.forEach((listener) => listener());
        breakers.resync();
      },
      () => sub.disconnect(true),
    );
  });
  const down = (err?: Error) => {
    if (reported || closed) return;
    reported = true;
    log(`Redis unreachable (${(err as NodeJS.ErrnoException | undefined)?.code ?? "connection closed"}): chats get 503 store_unavailable until it is back`);
  };
  redis.on("error", down);
  redis.on("close", () => down());
  sub.on("error", () => {});
  sub.on("close", () => (subscribed = false));

  return {
    admit: (holds, points, rates, now, spent) => budgets.admit(holds, points, rates, now, spent),
    settle: (scopes, held, actual, tokens) => budgets.settle(scopes, held, actual, tokens),
    takeSlots: (limits, id, now) => slots.take(limits, id, now),
    freeSlots: (scopes, id) => slots.free(scopes, id),

    admitChannel: (channel, now) => breakers.admit(channel, now),
    channelResult: (channel, ok, now, retryAfterMs) => breakers.record(channel, ok, now, retryAfterMs),
    breaker: (channel) => breakers.view(channel),
    shareChannelLoads: (own, now) => shareLoads(redis, `${ns}channel-load`, instance, own, now),

    async publishKeyChange(change) {
      tellKeys(change);
      await publish(topics.keys, { change });
    },
    onKeyChange(listener) {
      keyListeners.add(listener);
      return () => void keyListeners.delete(listener);
    },
    publishReload: () => publish(topics.reload, {}),
    onReload(listener) {
      reloadListeners.add(listener);
      return () => void reloadListeners.delete(listener);
    },

    publishChannelChange: () => publish(topics.channels, {}),
    onChannelChange(listener) {
      channelListeners.add(listener);
      return () => void channelListeners.delete(listener);
    },

    async ping() {
      await call(() => redis.ping());
      if (!subscribed) throw storeUnavailable();
    },
    // a key revoked meanwhile on another instance would go unheard: no metered request is served
    async reachable() {
      if (!shared()) await firstConnect();
      if (!shared()) throw storeUnavailable();
    },

    async close() {
      if (closed) return;
      closed = true;
      breakers.close();
      slots.close();
      keyListeners.clear();
      reloadListeners.clear();
      channelListeners.clear();
      await budgets.close();
      await Promise.all([redis, sub].map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}

/** The change a notice names, and nothing else it carries: anyone who can publish on the channel
 *  could write a notice, so it only ever makes an instance read the store. */
function readKeyChange(value: unknown): KeyChange | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { change, name } = value as { change?: unknown; name?: unknown };
  if (change === "resync") return { change };
  if ((change === "created" || change === "revoked") && typeof name === "string") return { change, name };
  return undefined;
}

/** `cause`: Redis's own error, when a call failed */
function storeUnavailable(cause?: unknown): GatewayError {
  return new GatewayError(503, "store_unavailable", "The gateway cannot reach its shared counters; retry shortly.", {
    type: "api_error",
    headers: { "Retry-After": "1" },
    cause,
  });
}

/** A load told longer ago than this is an instance's that stopped (docs/routing.md#load). */
const LOAD_FRESH_MS = 3_000;

/** One hash of `instance\0channel` → `calls:at`: this instance's written, the others' fresh ones
 *  summed per channel, stale ones removed; expires when no instance writes any more. */
async function shareLoads(redis: RedisClient, key: string, instance: string, own: Record<string, number>, now: number): Promise<Map<string, number>> {
  const multi = redis.multi();
  const fields = Object.entries(own).flatMap(([channel, calls]) => [`${instance}\0${channel}`, `${calls}:${now}`]);
  if (fields.length > 0) multi.hset(key, ...fields);
  multi.pexpire(key, LOAD_FRESH_MS * 10).hgetall(key);
  const results = await multi.exec();
  const all = (results?.at(-1)?.[1] ?? {}) as Record<string, string>;
  const others = new Map<string, number>();
  const stale: string[] = [];
  for (const [field, value] of Object.entries(all)) {
    const [who, channel] = field.split("\0");
    const [calls, at] = value.split(":").map(Number);
    if (who === instance || channel === undefined || !Number.isFinite(calls) || !Number.isFinite(at)) continue;
    if (now - at! > LOAD_FRESH_MS) stale.push(field);
    else others.set(channel, (others.get(channel) ?? 0) + Math.max(0, calls!));
  }
  if (stale.length > 0) redis.hdel(key, ...stale).catch(() => {});
  return others;
}
