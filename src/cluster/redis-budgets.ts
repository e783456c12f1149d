// Budget holds shared through Redis (docs/api.md#budgets): one Lua step admits a request — checks
// every budget and rate window of it, then holds its worst case in all and counts a hit in each, or
// changes nothing; settling releases the hold. Each instance keeps its own hold per scope in Redis,
// changed by increments, and knows locally what it holds. After a failed or unanswered command, or a
// reconnect (Redis restarted empty, or another instance took this one for dead), the hold is written
// again as that local total ("mended"). A heartbeat keeps this instance's holds alive: those of an
// instance silent for LIVENESS_MS are dropped, so a crash does not hold budget for ever.
import type { Redis } from "ioredis";
import type { Scripts } from "./redis-scripts.js";
import type { AdmitResult, BudgetHold, PointRange, RateLimit } from "./types.js";

/** a budget's spent and holds live this long after its last reservation or settling */
const BUDGET_TTL_MS = 24 * 3_600_000;
/** a minute's tokens (tpm) live this long after its last reservation or settling */
const MINUTE_TTL_MS = 3 * 60_000;
/** a rate window lives this long after its last hit */
const RATE_TTL_MS = 120_000;
const LIVENESS_MS = 30_000;
const HEARTBEAT_MS = 5_000;
const FORGET_INSTANCE_MS = 10 * 60_000;
const MEND_RETRY_MS = 1_000;
const EPSILON = 1e-9;

export interface SharedBudgetsOptions {
  redis: Redis;
  scripts: Scripts;
  instance: string;
  /** the sorted set of instances by last heartbeat */
  instancesKey: string;
  key: (scope: string) => string;
  rateKey: (scope: string) => string;
  /** runs a Redis call; a failure of Redis becomes the client's 503 */
  call: <T>(run: () => Promise<T>) => Promise<T>;
  /** the client's 503 */
  unavailable: () => Error;
}

/** A reservation sent and not answered yet. */
interface Pending {
  scopes: string[];
  points: number;
  /** scopes mended while it was on its way: a mend is applied after it, so overwrote its points */
  overwritten: Set<string>;
}

export function createSharedBudgets(opts: SharedBudgetsOptions) {
  const { redis, scripts, instance, instancesKey, key, rateKey, call } = opts;
  /** points this instance holds per scope (answered reservations) */
  const held = new Map<string, number>();
  const pending = new Set<Pending>();
  /** scopes to write again → whether their spent must be loaded from the store again */
  const unmended = new Map<string, boolean>();
  const loading = new Map<string, Promise<void>>();
  let retry: NodeJS.Timeout | undefined;
  let closed = false;

  function addHeld(scopes: string[], points: number): void {
    for (const scope of scopes) {
      const total = (held.get(scope) ?? 0) + points;
      if (total > EPSILON) held.set(scope, total);
      else held.delete(scope);
    }
  }
  /** Changes this instance's hold in Redis and adds `actual` to spent: the settle step. */
  const change = (scopes: string[], holdChange: number, actual: number, ttl = BUDGET_TTL_MS) =>
    call(() => scripts.settle(scopes.map(key), [instance, String(holdChange), String(actual), ttl]));

  function mend(scopes: Iterable<string>, forgetSpent: boolean): void {
    for (const scope of scopes) unmended.set(scope, forgetSpent || (unmended.get(scope) ?? false));
    void mendNow();
  }
  async function mendNow(): Promise<void> {
    clearTimeout(retry);
    retry = undefined;
    if (closed || redis.status !== "ready") return; // mended at the next connect
    const work = [...unmended];
    unmended.clear();
    for (const p of pending) for (const [scope] of work) if (p.scopes.includes(scope)) p.overwritten.add(scope);
    await Promise.all(
      work.map(([scope, forget]) =>
        scripts.repair([instancesKey, key(scope)], [instance, String(held.get(scope) ?? 0), forget ? 1 : 0, BUDGET_TTL_MS]).catch(() => {
          unmended.set(scope, forget || (unmended.get(scope) ?? false));
          retry ??= setTimeout(() => void mendNow(), MEND_RETRY_MS).unref();
        }),
      ),
    );
  }

  /** Loads a scope's settled points into Redis, unless another instance got there first. */
  function loadSpent(scope: string, spent: (scope: string) => Promise<number>): Promise<void> {
    let loaded = loading.get(scope);
    if (!loaded) {
      loaded = spent(scope)
        .then((points) => call(() => redis.multi().hsetnx(key(scope), "spent", String(points)).pexpire(key(scope), BUDGET_TTL_MS).exec()))
        .then(() => {})
        .finally(() => loading.delete(scope));
      loading.set(scope, loaded);
    }
    return loaded;
  }

  /** One admission step; its answer as the script gave it (redis-scripts.ts ADMIT). */
  async function admitOnce(holds: BudgetHold[], points: PointRange, rates: RateLimit[], now: number): Promise<Array<number | string>> {
    const scopes = holds.map((h) => h.scope);
    // until answered, the most it may hold is what a mend must account for
    const p: Pending = { scopes, points: points.max, overwritten: new Set() };
    pending.add(p);
    try {
      const keys = [instancesKey, ...scopes.map(key), ...rates.map((r) => rateKey(r.scope))];
      const tokens = points.tokens ?? { min: 0, max: 0 };
      const args = [
        ...[instance, String(points.min), LIVENESS_MS, BUDGET_TTL_MS, holds.length, now, RATE_TTL_MS, String(points.max)],
        ...[String(tokens.min), String(tokens.max), MINUTE_TTL_MS],
        ...holds.flatMap((h) => [String(h.max), h.tokens ? 1 : 0]),
        ...rates.map((r) => r.limit),
      ];
      const result = (await call(() => scripts.admit(keys, args))) as Array<number | string>;
      if (result[0] === 0) {
        const amount = (h: BudgetHold) => Number(result[h.tokens ? 2 : 1]);
        for (const h of holds) addHeld([h.scope], amount(h));
        // held again, after the mend that overwrote it (sent now, so applied after it)
        for (const h of holds.filter((h) => p.overwritten.has(h.scope))) change([h.scope], amount(h), 0).catch(() => mend([h.scope], false));
      }
      return result;
    } catch (err) {
      mend(scopes, false); // held, perhaps, without an answer
      throw err;
    } finally {
      pending.delete(p);
    }
  }

  const heartbeat = () => void scripts.heartbeat([instancesKey], [instance, FORGET_INSTANCE_MS]).catch(() => {});
  const heartbeatTimer = setInterval(heartbeat, HEARTBEAT_MS).unref();

  return {
    async admit(holds: BudgetHold[], points: number | PointRange, rates: RateLimit[], now: number, spent: (scope: string) => Promise<number>): Promise<AdmitResult> {
      const range = typeof points === "number" ? { min: points, max: points } : points;
      // a round per scope whose spent is not loaded yet, at most
      for (let round = 0; round <= holds.length; round++) {
        const result = await admitOnce(holds, range, rates, now);
        const [answer, index = 0, retryAfterMs = 0] = result.map(Number);
        if (answer === 0) return { ok: true, held: Number(result[1]), heldTokens: Number(result[2]) };
        if (answer === 1) return { ok: false, refused: "budget", scope: holds[index - 1]!.scope };
        if (answer === 2) return { ok: false, refused: "rate", scope: rates[index - 1]!.scope, retryAfterMs };
        await loadSpent(holds[index - 1]!.scope, spent);
      }
      throw opts.unavailable(); // spent loaded, and gone again at once: Redis is evicting keys
    },

    async settle(scopes: string[], points: number, actual: number, tokens?: boolean): Promise<void> {
      if (scopes.length === 0) return;
      addHeld(scopes, -points);
      try {
        await change(scopes, -points, actual, tokens ? MINUTE_TTL_MS : BUDGET_TTL_MS);
      } catch {
        // the hold is written again; spent may or may not have counted: loaded from the store again
        mend(scopes, true);
      }
    },

    /** Connected (again): this instance is alive, and its holds are written again. */
    connected(): void {
      heartbeat();
      mend(held.keys(), false);
    },

    async close(): Promise<void> {
      closed = true;
      clearInterval(heartbeatTimer);
      clearTimeout(retry);
      // other instances drop whatever this one still holds at their next reservation
      if (redis.status === "ready") await redis.zrem(instancesKey, instance).catch(() => {});
    },
  };
}
