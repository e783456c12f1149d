// Budget and rate admission for a metered request (docs/api.md#budgets): refuses it when an app, key or share
// link would pass its points budget with the request's worst-case points, or has used up its
// requests per minute; otherwise holds the worst case until the request settles to its actual
// points (answered or cut) or releases it (nothing generated). Holds live in the cluster state,
// so concurrent requests — on one instance or several — cannot overshoot a budget together.
import type { AdmitResult, ClusterState } from "../cluster/types.js";
import { GatewayError, rateLimited } from "../http/errors.js";
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
  /** the points held: the worst case, or less when a budget could pay only for less (serve until
   *  spent); infinite when no budget applies */
  readonly held: number;
  /** The request was answered (or cut): its actual points count against every budgeted scope. */
  settle(points: number): void;
  /** The request failed before anything was generated: it spends nothing. */
  release(): void;
}

/** A request's worst-case points known two ways: a bound that costs nothing to know, and the counted
 *  worst case (docs/api.md#budgets), worked out only when the bound does not fit a budget. Serve
 *  until spent: with `least` (the prompt and one output token), a budget that cannot pay for the
 *  whole worst case holds what it has left, down to `least`; without, all or nothing. */
export interface WorstCase {
  bound: number;
  least?: number;
  counted(): Promise<{ most: number; least?: number }>;
}

export interface Quota {
  /** The cheap refusals, before any costly work (docs/api.md#budgets): every QPM window counts a hit,
   *  and every budget must still have room for `least` points (nothing is held). Throws a 429. */
  precheck(limits: QuotaLimit[], least: number, now: number): Promise<void>;
  /** Holds the worst case (or what the budgets have left of it, down to its least); throws a 429
   *  GatewayError when a budget cannot hold even that, or — unless `precheck` counted them already —
   *  a rate is exceeded. The hold is made from a WorstCase's bound when that fits, else its count. */
  admit(limits: QuotaLimit[], worstCase: number | WorstCase, now: number, opts?: { ratesCounted?: boolean }): Promise<Reservation>;
}

export function createQuota(store: Store, state: ClusterState, observer: Observer): Quota {
  const spent = (scope: string) => store.getSpent(scope);
  const budgets = (limits: QuotaLimit[]) => limits.filter((l) => l.maxUsagePoints >= 0).map((l) => ({ scope: l.scope, max: l.maxUsagePoints }));
  const windows = (limits: QuotaLimit[]) => limits.filter((l) => l.qpm > 0).map((l) => ({ scope: l.scope, limit: l.qpm }));

  /** The 429 for a refusal; share-link users are the public: what they are told names no app and no configured number. */
  function refused(limits: QuotaLimit[], admitted: Exclude<AdmitResult, { ok: true }>): GatewayError {
    const forPublic = limits.some((l) => scopeKind(l.scope) === "share");
    const limit = limits.find((l) => l.scope === admitted.scope)!;
    if (admitted.refused === "rate") return rateExceeded(limit, admitted.retryAfterMs, forPublic);
    observer.budgetRefused(scopeKind(limit.scope));
    return budgetSpent(limit, forPublic);
  }

  return {
    async precheck(limits, least, now) {
      const holds = budgets(limits);
      const rates = windows(limits);
      if (holds.length === 0 && rates.length === 0) return;
      const admitted = await state.admit(holds, { min: least, max: 0 }, rates, now, spent);
      if (!admitted.ok) throw refused(limits, admitted);
    },

    async admit(limits, worstCase, now, opts = {}) {
      const holds = budgets(limits);
      const rates = opts.ratesCounted ? [] : windows(limits);
      const scopes = holds.map((h) => h.scope);
      const wc: { bound: number; least?: number } = typeof worstCase === "number" ? { bound: worstCase } : worstCase;
      let range = { min: wc.least ?? wc.bound, max: wc.bound };
      // no budget: nothing is held, and nothing limits what the request may spend
      if (holds.length === 0 && rates.length === 0) return hold(state, scopes, Number.POSITIVE_INFINITY);
      // one step: every budget and every rate window, all or nothing (a refused request uses neither)
      let admitted = await state.admit(holds, range, rates, now, spent);
      if (!admitted.ok && admitted.refused === "budget" && typeof worstCase !== "number") {
        // refused only when the counted worst case does not fit either
        const counted = await worstCase.counted();
        const exact = { min: counted.least ?? counted.most, max: counted.most };
        if (exact.min < range.min) admitted = await state.admit(holds, (range = exact), rates, now, spent);
      }
      if (!admitted.ok) throw refused(limits, admitted);
      return hold(state, scopes, holds.length > 0 ? admitted.held : Number.POSITIVE_INFINITY);
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
  return { held, settle: end, release: () => end(0) };
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
  return rateLimited(retryAfterMs, (seconds) =>
    forPublic ? `Too many questions — try again in ${seconds} s.` : `${limit.label} allows ${limit.qpm} requests per minute; retry in ${seconds} s`,
  );
}
