// Budget and rate admission for a chat request: refuses it when an app, key or share link has spent
// its points budget or used up its requests per minute; otherwise reserves it until the caller
// settles its points (answered) or releases it (failed).
import { LRUCache } from "lru-cache";
import { GatewayError } from "../http/errors.js";
import type { Store } from "../store/types.js";

const MAX_TRACKED_SCOPES = 10_000;
// Re-reading the persistent counter now and then lets processes that share one database see each
// other's spend; settles in flight keep the entry they were admitted with, so none counts twice.
const SPEND_REFRESH_MS = 60_000;

export interface QuotaLimit {
  /** `app:<id>`, `key:<name>` or `share:<shareId>`: the store's spend scope and rate window */
  scope: string;
  /** who the limit belongs to, in words, for messages: "app", "API key", "share link" */
  label: string;
  /** -1: no budget */
  maxUsagePoints: number;
  /** 0: no rate limit */
  qpm: number;
}

export interface Reservation {
  /** The request was answered: its points count against every budgeted scope from now on. */
  settle(points: number): void;
  /** The request failed: it spends nothing. */
  release(): void;
}

export interface Quota {
  /** Throws a 429 GatewayError when a budget is spent or a rate is exceeded. */
  admit(limits: QuotaLimit[], now: number): Promise<Reservation>;
}

/** A scope's points as this process knows them: the store's counter plus what settled since. */
interface Spend {
  points: number;
}

export function createQuota(store: Store): Quota {
  const spends = new LRUCache<string, Spend>({
    max: MAX_TRACKED_SCOPES,
    ttl: SPEND_REFRESH_MS,
    fetchMethod: async (scope) => ({ points: await store.getSpent(scope) }),
  });

  async function loadSpend(scope: string): Promise<Spend> {
    const spend = await spends.fetch(scope);
    if (!spend) throw new Error(`could not load the spend of ${scope}`);
    return spend;
  }

  /** Checks every budget against one consistent view; returns the spends the request will add to. */
  async function checkBudgets(limits: QuotaLimit[]): Promise<Set<Spend>> {
    const budgeted = limits.filter((l) => l.maxUsagePoints >= 0);
    const loaded = await Promise.all(budgeted.map((l) => loadSpend(l.scope)));
    budgeted.forEach((limit, i) => {
      if (loaded[i]!.points >= limit.maxUsagePoints) throw budgetSpent(limit);
    });
    return new Set(loaded);
  }

  return {
    async admit(limits, now) {
      // budgets first, so that a request refused for its budget does not use up rate
      const held = await checkBudgets(limits);
      for (const limit of limits.filter((l) => l.qpm > 0)) {
        const decision = await store.hitRate(limit.scope, limit.qpm, now);
        if (!decision.allowed) throw rateExceeded(limit, decision.retryAfterMs);
      }
      return reserve(held);
    },
  };
}

function reserve(held: Set<Spend>): Reservation {
  let open = true;
  return {
    settle(points) {
      if (!open) return;
      open = false;
      if (points > 0) for (const spend of held) spend.points += points;
    },
    release() {
      open = false;
    },
  };
}

function budgetSpent(limit: QuotaLimit): GatewayError {
  return new GatewayError(429, "insufficient_quota", `${limit.label} has used its points budget (${limit.maxUsagePoints})`, {
    type: "insufficient_quota",
  });
}

function rateExceeded(limit: QuotaLimit, retryAfterMs: number): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new GatewayError(
    429,
    "rate_limit_exceeded",
    `${limit.label} allows ${limit.qpm} requests per minute; retry in ${seconds} s`,
    { headers: { "Retry-After": String(seconds) } },
  );
}
