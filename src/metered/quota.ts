// Budget and rate admission for a metered request (docs/api.md#budgets): refuses it when an app, key or share
// link would pass its points budget with the request's worst-case points, or has used up its
// requests per minute; otherwise holds the worst case until the request settles to its actual
// points (answered or cut) or releases it (nothing generated). Holds live in the cluster state,
// so concurrent requests — on one instance or several — cannot overshoot a budget together.
import type { ClusterState } from "../cluster/types.js";
import { GatewayError } from "../http/errors.js";
import type { Observer } from "../observability/observer.js";
import type { Store } from "../store/types.js";

export interface QuotaLimit {
  /** `app:<id>`, `key:<name>` or `share:<shareId>`: the store's spend scope and rate window */
  scope: string;
  /** who the limit belongs to, in words, for messages: "App support", "This share link" */
  label: string;
  /** -1: no budget */
  maxUsagePoints: number;
  /** 0: no rate limit */
  qpm: number;
}

export interface Reservation {
  /** The request was answered (or cut): its actual points count against every budgeted scope. */
  settle(points: number): void;
  /** The request failed before anything was generated: it spends nothing. */
  release(): void;
}

/** A request's worst-case points known two ways: a bound that costs nothing to know, and the counted
 *  worst case (CONTRACTS §10), worked out only when the bound does not fit a budget. */
export interface WorstCase {
  bound: number;
  counted(): Promise<number>;
}

export interface Quota {
  /** Throws a 429 GatewayError when a budget cannot hold the worst case or a rate is exceeded. The
   *  hold is a WorstCase's bound when that fits every budget, else its counted worst case. */
  admit(limits: QuotaLimit[], worstCase: number | WorstCase, now: number): Promise<Reservation>;
}

export function createQuota(store: Store, state: ClusterState, observer: Observer): Quota {
  const spent = (scope: string) => store.getSpent(scope);
  return {
    async admit(limits, worstCase, now) {
      const holds = limits.filter((l) => l.maxUsagePoints >= 0).map((l) => ({ scope: l.scope, max: l.maxUsagePoints }));
      const rates = limits.filter((l) => l.qpm > 0).map((l) => ({ scope: l.scope, limit: l.qpm }));
      let worstCasePoints = typeof worstCase === "number" ? worstCase : worstCase.bound;
      const scopes = holds.map((h) => h.scope);
      if (holds.length === 0 && rates.length === 0) return hold(state, scopes, worstCasePoints);
      // one step: every budget and every rate window, all or nothing (a refused request uses neither)
      let admitted = await state.admit(holds, worstCasePoints, rates, now, spent);
      if (!admitted.ok && admitted.refused === "budget" && typeof worstCase !== "number") {
        // refused only when the counted worst case does not fit either
        const counted = await worstCase.counted();
        if (counted < worstCasePoints) admitted = await state.admit(holds, (worstCasePoints = counted), rates, now, spent);
      }
      if (admitted.ok) return hold(state, scopes, worstCasePoints);
      // share-link users are the public: what they are told names no app and no configured number
      const forPublic = limits.some((l) => scopeKind(l.scope) === "share");
      const limit = limits.find((l) => l.scope === admitted.scope)!;
      if (admitted.refused === "rate") throw rateExceeded(limit, admitted.retryAfterMs, forPublic);
      observer.budgetRefused(scopeKind(limit.scope));
      throw budgetSpent(limit, forPublic);
    },
  };
}

function hold(state: ClusterState, scopes: string[], held: number): Reservation {
  let open = true;
  const end = (actual: number) => {
    if (!open) return;
    open = false;
    if (scopes.length > 0) void state.settle(scopes, held, Math.max(0, actual));
  };
  return { settle: end, release: () => end(0) };
}

/** `app`, `key` or `share`: the bounded label of the refusals metric. */
function scopeKind(scope: string): string {
  return scope.slice(0, scope.indexOf(":"));
}

function budgetSpent(limit: QuotaLimit, forPublic: boolean): GatewayError {
  const message = forPublic
    ? "This chat link has used up its allowance; ask whoever shared it with you to raise it."
    : `${limit.label} has not enough of its points budget left for this request.`;
  return new GatewayError(429, "insufficient_quota", message, { type: "insufficient_quota" });
}

function rateExceeded(limit: QuotaLimit, retryAfterMs: number, forPublic: boolean): GatewayError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const message = forPublic
    ? `Too many questions — try again in ${seconds} s.`
    : `${limit.label} allows ${limit.qpm} requests per minute; retry in ${seconds} s`;
  return new GatewayError(429, "rate_limit_exceeded", message, { headers: { "Retry-After": String(seconds) } });
}
