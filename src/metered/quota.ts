// Budget and rate admission for a metered request (docs/api.md#budgets): refuses it when an app, key or share
// link would pass its points budget (lifetime, or of the current day, week or month) with the
// request's worst-case points, its tokens per minute with the request's worst-case tokens, or has used
// up its requests per minute; otherwise holds the worst case until the request settles to its actual
// points and tokens (answered or cut) or releases it (nothing generated). Holds live in the cluster
// state, so concurrent requests — on one instance or several — cannot overshoot a budget together.
import type { AdmitResult, BudgetHold, ClusterState, PointRange } from "../cluster/types.js";
import { GatewayError, rateLimited } from "../http/errors.js";
import type { Observer } from "../observability/observer.js";
import type { Store } from "../store/types.js";
import type { Period } from "../time/periods.js";

export interface QuotaLimit {
  /** `app:<id>`, `key:<name>` or `share:<shareId>` (a period budget: `key:<name>@day:2026-11-27`):
   *  the store's spend scope and rate window */
  scope: string;
  /** who the limit belongs to, in words, for messages: "App support", "This share link" */
  label: string;
  /** -1: no budget */
  maxUsagePoints: number;
  /** 0: no rate limit */
  qpm: number;
  /** tokens a minute; 0 or absent: no limit */
  tpm?: number;
  /** a period budget (`maxUsagePoints` are the period's): its period and when the next one starts */
  period?: { name: Period; resetsAt: number };
}

/** A limit's points budget (lifetime, or a period's): -1 is none. */
export const holdsPoints = (l: QuotaLimit): boolean => l.maxUsagePoints >= 0;
/** A limit's tokens per minute: 0 or absent is none. */
export const holdsTokens = (l: QuotaLimit): boolean => (l.tpm ?? 0) > 0;

/** Whether any budget limits what a caller with `limits` may spend: a points budget (lifetime or a
 *  period's), or — for a kind that has tokens — tokens per minute (docs/api.md#budgets). When none
 *  does, nothing is held and a kind need not work out its worst case. */
export function budgeted(limits: QuotaLimit[], kind: { tokens: boolean }): boolean {
  return limits.some((l) => holdsPoints(l) || (kind.tokens && holdsTokens(l)));
}

export interface Reservation {
  /** the points held: the worst case, or less when a budget could pay only for less (serve until
   *  spent); infinite when no budget applies */
  readonly held: number;
  /** the same in tokens, for tokens per minute: infinite when no `tpm` applies */
  readonly heldTokens: number;
  /** The request was answered (or cut): its actual points (and tokens) count against every scope. */
  settle(points: number, tokens?: number): void;
  /** The request failed before anything was generated: it spends nothing. */
  release(): void;
}

/** What a hold pays for, for a kind that shrinks its plan to it (serve until spent). */
export type Held = Pick<Reservation, "held" | "heldTokens">;

/** A request's worst-case points known two ways: a bound that costs nothing to know, and the counted
 *  worst case (docs/api.md#budgets), worked out only when the bound does not fit a budget. Serve
 *  until spent: with `least` (the prompt and one output token), a budget that cannot pay for the
 *  whole worst case holds what it has left, down to `least`; without, all or nothing. `tokens`: the
 *  same in tokens, for kinds that have tokens (held against `tpm`). */
export interface WorstCase {
  bound: number;
  least?: number;
  tokens?: { bound: number; least?: number };
  counted(): Promise<{ most: number; least?: number; tokens?: { most: number; least?: number } }>;
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

/** A budget held for a request, and what it is a budget of. */
interface Budget {
  hold: BudgetHold;
  limit: QuotaLimit;
  /** the period's end (period budgets), the minute's end (tokens per minute) */
  resetsAt?: number;
}

const MINUTE_MS = 60_000;
/** a period's spend is read back from the store for the dashboard at most this often per scope */
const PERIOD_GAUGE_MS = 1_000;
const MAX_GAUGE_SCOPES = 10_000;

export function createQuota(store: Store, state: ClusterState, observer: Observer): Quota {
  const spent = (scope: string) => store.getSpent(scope);
  const windows = (limits: QuotaLimit[]) => limits.filter((l) => l.qpm > 0).map((l) => ({ scope: l.scope, limit: l.qpm }));
  const pointBudgets = (limits: QuotaLimit[]): Budget[] =>
    limits.filter(holdsPoints).map((l) => ({ hold: { scope: l.scope, max: l.maxUsagePoints }, limit: l, resetsAt: l.period?.resetsAt }));
  // a minute's tokens are held in a scope of that minute: the next minute starts from nothing
  const tokenBudgets = (limits: QuotaLimit[], now: number): Budget[] => {
    const minute = Math.floor(now / MINUTE_MS);
    return limits
      .filter(holdsTokens)
      .map((l) => ({ hold: { scope: `${l.scope}@minute:${minute}`, max: l.tpm!, tokens: true }, limit: l, resetsAt: (minute + 1) * MINUTE_MS }));
  };

  // what the dashboard draws: tokens against each tpm, and each period's spend (the store's, shared
  // by every instance) against its periodPoints
  const gaugeRead = new Map<string, number>();
  function report(budgets: Budget[], tokens: number): void {
    let now: number | undefined;
    for (const { hold, limit } of budgets) {
      if (hold.tokens) observer.tokensUsed(scopeKind(limit.scope), scopeName(limit), tokens, limit.tpm!);
      if (!limit.period) continue;
      now ??= Date.now();
      if (now - (gaugeRead.get(limit.scope) ?? 0) < PERIOD_GAUGE_MS) continue;
      // bounded: past periods' scopes are forgotten together now and then
      if (gaugeRead.size >= MAX_GAUGE_SCOPES) gaugeRead.clear();
      gaugeRead.set(limit.scope, now);
      const period = limit.period.name;
      store.getSpent(limit.scope).then((spent) => observer.periodSpent(scopeKind(limit.scope), scopeName(limit), period, spent, limit.maxUsagePoints), () => {});
    }
  }

  /** The 429 for a refusal; share-link users are the public: what they are told names no app and no configured number. */
  function refused(limits: QuotaLimit[], budgets: Budget[], admitted: Exclude<AdmitResult, { ok: true }>, now: number): GatewayError {
    const forPublic = limits.some((l) => scopeKind(l.scope) === "share");
    if (admitted.refused === "rate") return rateExceeded(limits.find((l) => l.scope === admitted.scope)!, admitted.retryAfterMs, forPublic);
    const budget = budgets.find((b) => b.hold.scope === admitted.scope)!;
    observer.budgetRefused(scopeKind(budget.limit.scope));
    if (budget.hold.tokens) return tpmExceeded(budget.limit, budget.resetsAt! - now, forPublic);
    if (budget.limit.period) return periodSpent(budget.limit, budget.resetsAt!, now, forPublic);
    return budgetSpent(budget.limit, forPublic);
  }

  return {
    async precheck(limits, least, now) {
      const budgets = pointBudgets(limits);
      const rates = windows(limits);
      if (budgets.length === 0 && rates.length === 0) return;
      const admitted = await state.admit(budgets.map((b) => b.hold), { min: least, max: 0 }, rates, now, spent);
      if (!admitted.ok) throw refused(limits, budgets, admitted, now);
    },

    async admit(limits, worstCase, now, opts = {}) {
      const wc: Omit<WorstCase, "counted"> = typeof worstCase === "number" ? { bound: worstCase } : worstCase;
      // kinds without tokens (speech, transcription) are not held against a tpm
      const budgets = [...pointBudgets(limits), ...(wc.tokens ? tokenBudgets(limits, now) : [])];
      const rates = opts.ratesCounted ? [] : windows(limits);
      // no budget: nothing is held, and nothing limits what the request may spend
      if (budgets.length === 0 && rates.length === 0) return hold(state, [], Infinity, Infinity, report);
      const holds = budgets.map((b) => b.hold);
      let range: PointRange = { min: wc.least ?? wc.bound, max: wc.bound, tokens: wc.tokens && { min: wc.tokens.least ?? wc.tokens.bound, max: wc.tokens.bound } };
      // one step: every budget and every rate window, all or nothing (a refused request uses neither)
      let admitted = await state.admit(holds, range, rates, now, spent);
      if (!admitted.ok && admitted.refused === "budget" && typeof worstCase !== "number") {
        // refused only when the counted worst case does not fit either
        const counted = await worstCase.counted();
        const tokens = counted.tokens && { min: counted.tokens.least ?? counted.tokens.most, max: counted.tokens.most };
        const exact = { min: counted.least ?? counted.most, max: counted.most, tokens };
        if (exact.min < range.min || (tokens && range.tokens && tokens.min < range.tokens.min)) admitted = await state.admit(holds, (range = exact), rates, now, spent);
      }
      if (!admitted.ok) throw refused(limits, budgets, admitted, now);
      const held = budgets.some((b) => !b.hold.tokens) ? admitted.held : Infinity;
      const heldTokens = budgets.some((b) => b.hold.tokens) ? admitted.heldTokens : Infinity;
      return hold(state, budgets, held, heldTokens, report);
    },
  };
}

function hold(state: ClusterState, budgets: Budget[], held: number, heldTokens: number, report: (budgets: Budget[], tokens: number) => void): Reservation {
  const points = budgets.filter((b) => !b.hold.tokens).map((b) => b.hold.scope);
  const minutes = budgets.filter((b) => b.hold.tokens).map((b) => b.hold.scope);
  let open = true;
  const end = (actual: number, tokens: number, settled: boolean) => {
    if (!open) return;
    open = false;
    if (points.length > 0) void state.settle(points, held, Math.max(0, actual));
    if (minutes.length > 0) void state.settle(minutes, heldTokens, Math.max(0, tokens), true);
    if (settled && budgets.length > 0) report(budgets, Math.max(0, tokens));
  };
  return { held, heldTokens, settle: (actual, tokens = 0) => end(actual, tokens, true), release: () => end(0, 0, false) };
}

/** `app`, `key` or `share`: the bounded label of the refusals metric. */
function scopeKind(scope: string): string {
  return scope.slice(0, scope.indexOf(":"));
}

/** The app's id, the key's name or the link's shareId of a limit's scope (a period's, less its period). */
function scopeName(limit: QuotaLimit): string {
  const start = limit.scope.indexOf(":") + 1;
  return limit.period ? limit.scope.slice(start, limit.scope.lastIndexOf("@")) : limit.scope.slice(start);
}

const retrySeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

function budgetSpent(limit: QuotaLimit, forPublic: boolean): GatewayError {
  const message = forPublic
    ? "This chat link has used up its allowance; ask whoever shared it with you to raise it."
    : `${limit.label} has not enough of its points budget left for this request.`;
  return new GatewayError(429, "insufficient_quota", message, { type: "insufficient_quota" });
}

/** A period budget spent: when it resets, in the message and as Retry-After. */
function periodSpent(limit: QuotaLimit, resetsAt: number, now: number, forPublic: boolean): GatewayError {
  const at = new Date(resetsAt).toISOString();
  const seconds = retrySeconds(resetsAt - now);
  const message = forPublic
    ? `This chat link has used up its allowance for this ${limit.period!.name}; it resets at ${at}.`
    : `${limit.label} has not enough of its points for this ${limit.period!.name} left for this request; it resets at ${at} (in ${seconds} s).`;
  return new GatewayError(429, "period_budget_exhausted", message, { type: "insufficient_quota", headers: { "Retry-After": String(seconds) } });
}

/** Tokens per minute spent: Retry-After is when the next minute starts, and with it a fresh allowance. */
function tpmExceeded(limit: QuotaLimit, retryAfterMs: number, forPublic: boolean): GatewayError {
  const seconds = retrySeconds(retryAfterMs);
  const message = forPublic
    ? `Too many words this minute — try again in ${seconds} s.`
    : `${limit.label} allows ${limit.tpm} tokens per minute, and this request's worst case does not fit what is left of this minute; retry in ${seconds} s.`;
  return new GatewayError(429, "tpm_exceeded", message, { type: "rate_limit_error", headers: { "Retry-After": String(seconds) } });
}

function rateExceeded(limit: QuotaLimit, retryAfterMs: number, forPublic: boolean): GatewayError {
  return rateLimited(retryAfterMs, (seconds) =>
    forPublic ? `Too many questions — try again in ${seconds} s.` : `${limit.label} allows ${limit.qpm} requests per minute; retry in ${seconds} s`,
  );
}
