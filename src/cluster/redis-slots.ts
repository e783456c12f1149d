// Caps on calls in flight shared through Redis (`maxConcurrent`, docs/routing.md#priority-and-fairness):
// a sorted set per capped scope, one member per call in flight scored by when it expires. Taking a
// slot is one Lua step over every scope of the call (expired members dropped, every count checked,
// then the member added to each), so instances racing on one scope never pass its cap together.
// This instance renews the expiry of the slots it holds every third of the TTL (writing them again
// into a Redis that restarted empty); those of an instance that died are not renewed and leave once
// the TTL passed. A free that fails is left to the TTL as well.
import type { Redis } from "ioredis";
import type { SlotLimit, SlotResult } from "./types.js";

/**
 * KEYS: one sorted set per scope. ARGV: the call's member, now (ms), the TTL (ms), then each scope's
 * cap. Returns 0 (a slot taken in every scope) or k (scope k is full: nothing changed).
 */
const TAKE = `
local member, now, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then return i end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + ttl, member)
  redis.call('PEXPIRE', key, ttl)
end
return 0
`;

/** KEYS: the call's sorted sets. ARGV: the next expiry, the TTL, then the call's member in each.
 *  Renews the member, or writes it again where it is gone (a Redis that restarted empty). */
const RENEW = `
local expiry, ttl = ARGV[1], tonumber(ARGV[2])
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, expiry, ARGV[2 + i])
  redis.call('PEXPIRE', key, ttl)
end
return 0
`;

export interface SharedSlotsOptions {
  redis: Redis;
  instance: string;
  key: (scope: string) => string;
  ttlMs: number;
  /** runs a Redis call; a failure of Redis becomes the client's 503 */
  call: <T>(run: () => Promise<T>) => Promise<T>;
  now?: () => number;
}

type Command = (...args: Array<string | number>) => Promise<unknown>;

export function createSharedSlots(opts: SharedSlotsOptions) {
  const { redis, key, ttlMs, call } = opts;
  const now = opts.now ?? Date.now;
  redis.defineCommand("sluice_slots_take", { lua: TAKE });
  redis.defineCommand("sluice_slots_renew", { lua: RENEW });
  const commands = redis as unknown as Record<"sluice_slots_take" | "sluice_slots_renew", Command>;
  /** the slots this instance holds: member → its scopes */
  const held = new Map<string, string[]>();
  const member = (id: string) => `${opts.instance}:${id}`;

  function renew(): void {
    if (redis.status !== "ready") return;
    for (const [m, scopes] of held) {
      void commands.sluice_slots_renew(scopes.length, ...scopes.map(key), now() + ttlMs, ttlMs, ...scopes.map(() => m)).catch(() => {});
    }
  }
  const timer = setInterval(renew, Math.max(100, Math.floor(ttlMs / 3))).unref();

  return {
    async take(limits: SlotLimit[], id: string, at: number): Promise<SlotResult> {
      if (limits.length === 0) return { ok: true };
      const m = member(id);
      const keys = limits.map((l) => key(l.scope));
      const answer = Number(await call(() => commands.sluice_slots_take(keys.length, ...keys, m, at, ttlMs, ...limits.map((l) => l.max))));
      if (answer > 0) return { ok: false, scope: limits[answer - 1]!.scope };
      held.set(m, limits.map((l) => l.scope));
      return { ok: true };
    },

    async free(scopes: string[], id: string): Promise<void> {
      const m = member(id);
      if (!held.delete(m) || scopes.length === 0) return;
      // a free that fails is left to the TTL: the slot is no longer renewed
      const multi = redis.multi();
      for (const scope of scopes) multi.zrem(key(scope), m);
      await multi.exec().catch(() => {});
    },

    close(): void {
      clearInterval(timer);
    },
  };
}
