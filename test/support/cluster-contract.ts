// The ClusterState contract (docs/api.md#budgets): budget reservations and rate windows at admission,
// checked through the quota and through the state's one admission step (all or nothing), with the
// same answers from every implementation. The worst case is
// held before the call and settled to the actual after, so concurrency can never overshoot a budget;
// a settle the quota does not wait for is seen by the next call. describeClusterContract(name, open)
// runs it against one implementation; a fresh state per test.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createQuota, type QuotaLimit } from "../../src/metered/quota.js";
import type { AdmitResult, BudgetHold, ClusterState, KeyChange, RateLimit } from "../../src/cluster/types.js";
import { GatewayError } from "../../src/http/errors.js";
import { silentObserver } from "../../src/observability/observer.js";
import { createSqliteStore } from "../../src/store/sqlite.js";
import type { Store, UsageRow } from "../../src/store/types.js";

const T0 = Date.UTC(2025, 0, 1);
const app = (maxUsagePoints: number, qpm = 0): QuotaLimit => ({ scope: "app:support", label: "App support", maxUsagePoints, qpm });
const key = (maxUsagePoints: number, qpm = 0): QuotaLimit => ({ scope: "key:web", label: "API key web", maxUsagePoints, qpm });

function usage(points: number): UsageRow {
  return {
    time: T0, appId: "support", keyName: "web", shareId: null, model: "glm", channel: "local",
    inputTokens: 1, outputTokens: 1, points, status: 200, durationMs: 1, chatId: null, finishReason: "stop", cachedTokens: 0,
  };
}

export interface RateAnswer {
  allowed: boolean;
  /** when not allowed: milliseconds until a hit would be allowed */
  retryAfterMs: number;
}

/** One hit in the scope's window through the state's admission step, no budget with it. */
export async function hitRate(state: ClusterState, scope: string, limit: number, now: number): Promise<RateAnswer> {
  const result = await state.admit([], 0, [{ scope, limit }], now, async () => 0);
  if (result.ok) return { allowed: true, retryAfterMs: 0 };
  expect(result.refused).toBe("rate");
  return { allowed: false, retryAfterMs: result.refused === "rate" ? result.retryAfterMs : Number.NaN };
}

async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

/**
 * Drives `hit` with `count` hits at seeded random times (now and then a long pause) and checks every
 * answer against a plain list of the hits of the last 60 s at one-second resolution: allowed below
 * `limit`, else a Retry-After of when the oldest leaves.
 */
export async function expectLikeTimestampList(hit: (now: number, limit: number) => RateAnswer | Promise<RateAnswer>, count: number, limit: number): Promise<void> {
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const hits: number[] = [];
  let now = T0;
  for (let i = 0; i < count; i++) {
    now += Math.floor(random() * (random() < 0.01 ? 90_000 : 400));
    const second = Math.floor(now / 1000);
    while (hits.length > 0 && hits[0]! <= second - 60) hits.shift();
    const expected = hits.length < limit;
    const got = await hit(now, limit);
    expect(got.allowed).toBe(expected);
    if (expected) hits.push(second);
    else expect(got.retryAfterMs).toBe((hits[0]! + 60) * 1000 - now);
  }
}

export function describeClusterContract(name: string, open: () => Promise<ClusterState>): void {
  describe(`cluster state: ${name}`, () => {
    let store: Store;
    let state: ClusterState;
    const states: ClusterState[] = [];
    const refusals: string[] = [];
    const fresh = async () => {
      const s = await open();
      states.push(s);
      return s;
    };
    const newQuota = () => createQuota(store, state, { ...silentObserver, budgetRefused: (kind) => refusals.push(kind) });
    beforeEach(async () => {
      store = createSqliteStore(":memory:");
      state = await fresh();
      refusals.length = 0;
    });
    afterEach(async () => {
      await Promise.all(states.splice(0).map((s) => s.close()));
      await store.close();
    });

    describe("points budgets", () => {
      it("refuses with 429 insufficient_quota when the worst case does not fit what is left, naming no numbers", async () => {
        const quota = newQuota();
        (await quota.admit([app(3), key(-1)], 1, T0)).settle(2.5);

        const err = await refusal(quota.admit([app(3), key(-1)], 1, T0));
        expect(err.status).toBe(429);
        expect(err.code).toBe("insufficient_quota");
        expect(err.type).toBe("insufficient_quota");
        expect(err.message).toBe("App support has not enough of its points budget left for this request.");
        expect(refusals).toEqual(["app"]);
        // a cheaper request still fits
        (await quota.admit([app(3)], 0.5, T0)).release();
      });

      it("holds worst cases of concurrent requests: never more admitted than the budget can pay for", async () => {
        const quota = newQuota();
        const admitted = await Promise.allSettled(Array.from({ length: 200 }, () => quota.admit([app(1)], 0.05, T0)));
        const held = admitted.filter((r) => r.status === "fulfilled");
        expect(held).toHaveLength(20);
        // settling to the actual (less than the worst case) frees room for more
        for (const r of held) (r as PromiseFulfilledResult<{ settle(p: number): void }>).value.settle(0.025);
        const more = await Promise.allSettled(Array.from({ length: 200 }, () => quota.admit([app(1)], 0.05, T0)));
        expect(more.filter((r) => r.status === "fulfilled")).toHaveLength(10);
      });

      it("starts from the persistent counter and does not count it twice after a restart", async () => {
        await store.recordUsage(usage(2), ["app:support"]);
        const quota = newQuota();
        const r = await quota.admit([app(5)], 1, T0);
        await store.recordUsage(usage(2), ["app:support"]);
        r.settle(2);
        // 4 spent of 5: a request of at most 1 point is still admitted
        (await quota.admit([app(5)], 1, T0)).release();

        state = await fresh();
        const restarted = newQuota();
        expect(await store.getSpent("app:support")).toBe(4);
        (await restarted.admit([app(5)], 1, T0)).settle(1);
        expect((await refusal(restarted.admit([app(5)], 0.1, T0))).code).toBe("insufficient_quota");
      });

      it("holds and settles in every budgeted scope of the request", async () => {
        const quota = newQuota();
        (await quota.admit([app(10), key(4)], 4, T0)).settle(4);
        const err = await refusal(quota.admit([key(4)], 0.1, T0));
        expect(err.message).toContain("API key web");
        // the app scope saw the same 4 points: 6 left
        (await quota.admit([app(10)], 6, T0)).settle(6);
        expect((await refusal(quota.admit([app(10)], 0.1, T0))).code).toBe("insufficient_quota");
      });

      it("releases a hold that spent nothing, and ends a reservation once", async () => {
        const quota = newQuota();
        const r = await quota.admit([app(1)], 1, T0);
        r.release();
        r.settle(5);
        const again = await quota.admit([app(1)], 1, T0);
        again.settle(0.5);
        again.settle(0.5);
        (await quota.admit([app(1)], 0.5, T0)).release();
      });

      it("refuses a budget of 0 and ignores a budget of -1", async () => {
        const quota = newQuota();
        expect((await refusal(quota.admit([app(0)], 0, T0))).status).toBe(429);
        (await quota.admit([app(-1)], 1e9, T0)).settle(1e9);
      });
    });

    describe("requests per minute", () => {
      it("allows `limit` hits per 60 s and says when the oldest hit leaves the window", async () => {
        expect(await hitRate(state, "key:web", 2, T0)).toEqual({ allowed: true, retryAfterMs: 0 });
        expect((await hitRate(state, "key:web", 2, T0 + 1000)).allowed).toBe(true);
        expect(await hitRate(state, "key:web", 2, T0 + 15_000)).toEqual({ allowed: false, retryAfterMs: 45_000 });
        // another scope has its own window
        expect((await hitRate(state, "key:other", 2, T0 + 15_000)).allowed).toBe(true);
        // the first hit has left the window; the refused hit was not counted
        expect((await hitRate(state, "key:web", 2, T0 + 60_000)).allowed).toBe(true);
        expect(await hitRate(state, "key:web", 2, T0 + 60_500)).toEqual({ allowed: false, retryAfterMs: 500 });
        // a minute of silence empties the window
        expect((await hitRate(state, "key:web", 2, T0 + 200_000)).allowed).toBe(true);
        expect((await hitRate(state, "key:web", 2, T0 + 200_000)).allowed).toBe(true);
        expect((await hitRate(state, "key:web", 2, T0 + 200_000)).allowed).toBe(false);
      });

      it("refuses with 429 rate_limit_exceeded and a Retry-After in whole seconds", async () => {
        const quota = newQuota();
        (await quota.admit([key(-1, 2)], 0, T0)).release();
        (await quota.admit([key(-1, 2)], 0, T0 + 500)).release();
        const err = await refusal(quota.admit([key(-1, 2)], 0, T0 + 30_200));
        expect(err.status).toBe(429);
        expect(err.code).toBe("rate_limit_exceeded");
        expect(err.type).toBe("rate_limit_error");
        expect(err.headers["Retry-After"]).toBe("30");
        expect(err.message).toContain("2 requests per minute");

        const late = await refusal(quota.admit([key(-1, 2)], 0, T0 + 59_999));
        expect(late.headers["Retry-After"]).toBe("1");
        (await quota.admit([key(-1, 2)], 0, T0 + 60_000)).release();
      });

      it("uses up no rate for a request its budget refuses, and frees the hold of a request its rate refuses", async () => {
        const quota = newQuota();
        (await quota.admit([app(1, 2)], 1, T0)).settle(1);
        for (let i = 0; i < 3; i++) expect((await refusal(quota.admit([app(1, 2)], 0.1, T0))).code).toBe("insufficient_quota");
        // the budget refusals left one of the two hits of the window free
        expect((await hitRate(state, "app:support", 2, T0)).allowed).toBe(true);
        expect((await hitRate(state, "app:support", 2, T0)).allowed).toBe(false);

        const budgeted = (qpm: number): QuotaLimit => ({ scope: "key:other", label: "k", maxUsagePoints: 1, qpm });
        (await quota.admit([budgeted(1)], 1, T0)).release();
        expect((await refusal(quota.admit([budgeted(1)], 1, T0))).code).toBe("rate_limit_exceeded");
        // the refused request's hold was given back: the whole budget is still there
        (await quota.admit([budgeted(0)], 1, T0)).release();
      });
    });

    describe("budgets and rate windows in one step, all or nothing", () => {
      const noSpent = async () => 0;
      const admit = (holds: BudgetHold[], points: number, rates: RateLimit[], now = T0) => state.admit(holds, points, rates, now, noSpent);
      const onlyBudget = (scope: string, points: number, max: number) => admit([{ scope, max }], points, []);
      const onlyRate = (scope: string, limit: number) => admit([], 0, [{ scope, limit }]);
      const tally = (results: AdmitResult[]) => {
        const count: Record<string, number> = { ok: 0, budget: 0, rate: 0 };
        for (const r of results) count[r.ok ? "ok" : r.refused]!++;
        return count;
      };

      it("admits the request that exactly fills a budget or reaches a rate limit, and refuses the next; budgets are checked first", async () => {
        const holds = [{ scope: "app:support", max: 0.3 }, { scope: "key:web", max: 1 }];
        const rates = [{ scope: "app:support", limit: 3 }, { scope: "key:web", limit: 10 }];
        // 0.1 + 0.1 + 0.1 is a little more than 0.3 in binary: still fits
        for (let i = 0; i < 3; i++) expect(await admit(holds, 0.1, rates)).toMatchObject({ ok: true });
        expect(await admit(holds, 0.1, rates)).toEqual({ ok: false, refused: "budget", scope: "app:support" });
        // 0 points still fit the full budget; the window is full until its first second leaves it
        expect(await admit(holds, 0, rates, T0 + 1_500)).toEqual({ ok: false, refused: "rate", scope: "app:support", retryAfterMs: 58_500 });
        expect(await onlyRate("key:web", 4)).toMatchObject({ ok: true });
        expect(await onlyRate("key:web", 4)).toMatchObject({ ok: false, refused: "rate" });
      });

      it("a request refused by a rate window holds no budget and counts no hit in its other windows", async () => {
        const holds = [{ scope: "app:support", max: 1 }];
        const rates = [{ scope: "app:support", limit: 3 }, { scope: "key:web", limit: 1 }];
        expect(await admit(holds, 0.5, rates)).toMatchObject({ ok: true });
        expect(await admit(holds, 0.5, rates)).toEqual({ ok: false, refused: "rate", scope: "key:web", retryAfterMs: 60_000 });
        // the other half of the budget is still there, exactly, and the app's window has 2 hits left
        expect(await onlyBudget("app:support", 0.5, 1)).toMatchObject({ ok: true });
        expect(await onlyBudget("app:support", 0.01, 1)).toMatchObject({ ok: false, refused: "budget" });
        for (let i = 0; i < 2; i++) expect(await onlyRate("app:support", 3)).toMatchObject({ ok: true });
        expect(await onlyRate("app:support", 3)).toMatchObject({ ok: false, refused: "rate" });
      });

      it("a request refused by one budget holds nothing in the others and counts no hit", async () => {
        const holds = [{ scope: "app:support", max: 1 }, { scope: "key:web", max: 0.5 }];
        const rates = [{ scope: "app:support", limit: 2 }];
        for (let i = 0; i < 3; i++) expect(await admit(holds, 0.6, rates)).toEqual({ ok: false, refused: "budget", scope: "key:web" });
        expect(await onlyBudget("app:support", 1, 1)).toMatchObject({ ok: true });
        for (let i = 0; i < 2; i++) expect(await onlyRate("app:support", 2)).toMatchObject({ ok: true });
        expect(await onlyRate("app:support", 2)).toMatchObject({ ok: false, refused: "rate" });
      });

      it("200 concurrent admissions overshoot neither a small budget nor a QPM, whichever binds", async () => {
        // the window binds: 15 hits, the budget (20 × 0.05) keeps exactly 15 holds
        const byRate = await Promise.all(Array.from({ length: 200 }, () => admit([{ scope: "app:support", max: 1 }], 0.05, [{ scope: "app:support", limit: 15 }])));
        expect(tally(byRate)).toEqual({ ok: 15, budget: 0, rate: 185 });
        expect(await onlyBudget("app:support", 0.25, 1)).toMatchObject({ ok: true });
        expect(await onlyBudget("app:support", 0.01, 1)).toMatchObject({ ok: false, refused: "budget" });

        // the budget binds: 20 holds, and the window (30) counted exactly those 20
        const byBudget = await Promise.all(Array.from({ length: 200 }, () => admit([{ scope: "key:web", max: 1 }], 0.05, [{ scope: "key:web", limit: 30 }])));
        expect(tally(byBudget)).toEqual({ ok: 20, budget: 180, rate: 0 });
        for (let i = 0; i < 10; i++) expect(await onlyRate("key:web", 30)).toMatchObject({ ok: true });
        expect(await onlyRate("key:web", 30)).toMatchObject({ ok: false, refused: "rate" });
      });

      it("serves until spent: holds what the tightest budget has left of a range, never less than its least", async () => {
        const holds = [{ scope: "app:support", max: 10 }, { scope: "key:web", max: 3 }];
        const range = (min: number, max: number) => state.admit(holds, { min, max }, [], T0, noSpent);
        // the key's 3 points bind: 3 of the 5 asked for are held
        expect(await range(1, 5)).toEqual({ ok: true, held: 3, heldTokens: 0 });
        // nothing left for even the least: refused, nothing held
        expect(await range(0.01, 5)).toEqual({ ok: false, refused: "budget", scope: "key:web" });
        await state.settle(["app:support", "key:web"], 3, 2.5);
        // 0.5 left of the key's budget: a range whose least fits gets exactly that
        expect(await range(0.25, 5)).toEqual({ ok: true, held: 0.5, heldTokens: 0 });
        await state.settle(["app:support", "key:web"], 0.5, 0);
        // a range that fits whole is held whole; a check {min, max: 0} holds nothing
        expect(await range(0.1, 0.2)).toEqual({ ok: true, held: 0.2, heldTokens: 0 });
        expect(await range(0.3, 0)).toEqual({ ok: true, held: 0, heldTokens: 0 });
        expect(await range(0.31, 0)).toMatchObject({ ok: false, refused: "budget" });
        // without budgets, the range's most
        expect(await state.admit([], { min: 1, max: 4 }, [], T0, noSpent)).toEqual({ ok: true, held: 4, heldTokens: 0 });
      });

      it("holds a minute's tokens beside points, each from its own range; a tokens hold starts at 0 and never reads the store", async () => {
        const minute = { scope: "key:web@minute:1", max: 100, tokens: true };
        const points = { scope: "key:web", max: 10 };
        const storeRead = async () => {
          throw new Error("a minute's tokens are not in the store");
        };
        const admit = (tokens: { min: number; max: number }) => state.admit([points, minute], { min: 1, max: 2, tokens }, [], T0, (s) => (s === "key:web" ? noSpent() : storeRead()));
        expect(await admit({ min: 10, max: 60 })).toEqual({ ok: true, held: 2, heldTokens: 60 });
        // 40 tokens left: served until spent in tokens, points whole
        expect(await admit({ min: 10, max: 60 })).toEqual({ ok: true, held: 2, heldTokens: 40 });
        expect(await admit({ min: 1, max: 60 })).toMatchObject({ ok: false, refused: "budget", scope: "key:web@minute:1" });
        // settled to the tokens used: the first call used 15 of its 60
        await state.settle(["key:web@minute:1"], 60, 15, true);
        await state.settle(["key:web"], 2, 1);
        expect(await admit({ min: 10, max: 60 })).toEqual({ ok: true, held: 2, heldTokens: 45 });
      });

      it("serves until spent under 200 concurrent ranges: never more held than the budget", async () => {
        const results = await Promise.all(Array.from({ length: 200 }, () => state.admit([{ scope: "key:conc", max: 1 }], { min: 0.01, max: 0.07 }, [], T0, noSpent)));
        const held = results.reduce((sum, r) => sum + (r.ok ? r.held : 0), 0);
        expect(held).toBeGreaterThan(1 - 1e-9);
        expect(held).toBeLessThan(1 + 1e-9);
        // 14 whole holds of 0.07 and one of the 0.02 left, then refusals
        expect(results.filter((r) => r.ok).length).toBe(15);
      });

      it("the quota retries with the counted worst case when the bound does not fit, counting one hit", async () => {
        const quota = newQuota();
        const worst = (bound: number, counted: number) => ({ bound, counted: async () => ({ most: counted }) });
        const r = await quota.admit([app(1, 2)], worst(5, 0.5), T0);
        // 0.5 held, one of the window's two hits used
        (await quota.admit([app(1, 2)], 0.5, T0)).release();
        expect((await refusal(quota.admit([app(1, 2)], 0, T0))).code).toBe("rate_limit_exceeded");
        r.release();
        // neither worst case fits: refused for the budget, no hit counted
        expect((await refusal(quota.admit([key(1, 1)], worst(5, 2), T0))).code).toBe("insufficient_quota");
        (await quota.admit([key(1, 1)], 1, T0)).release();
      });
    });

    describe("concurrency slots", () => {
      it("takes a slot in every capped scope or in none, and frees a call's slots once", async () => {
        const both = [{ scope: "app:support", max: 1 }, { scope: "key:web", max: 2 }];
        const keyOnly = [{ scope: "key:web", max: 2 }];
        expect(await state.takeSlots(both, "1", T0)).toEqual({ ok: true });
        // the app is full: refused, and the key's slot is not taken either
        expect(await state.takeSlots(both, "2", T0)).toEqual({ ok: false, scope: "app:support" });
        expect(await state.takeSlots(keyOnly, "3", T0)).toEqual({ ok: true });
        expect(await state.takeSlots(keyOnly, "4", T0)).toEqual({ ok: false, scope: "key:web" });
        await state.freeSlots(["app:support", "key:web"], "1");
        expect(await state.takeSlots(both, "2", T0)).toEqual({ ok: true });
        await state.freeSlots(["key:web"], "3");
        await state.freeSlots(["app:support", "key:web"], "2");
        expect(await state.takeSlots(keyOnly, "5", T0)).toEqual({ ok: true });
        expect(await state.takeSlots(keyOnly, "6", T0)).toEqual({ ok: true });
      });
    });

    describe("key changes", () => {
      it("reach this instance's listeners before the publish resolves, until they stop listening", async () => {
        const heard: KeyChange[] = [];
        // a resync (re-read everything) may come at any time: a connection was (re)made
        const stop = state.onKeyChange((change) => change.change !== "resync" && heard.push(change));
        await state.publishKeyChange({ change: "revoked", name: "web" });
        expect(heard).toEqual([{ change: "revoked", name: "web" }]);
        stop();
        await state.publishKeyChange({ change: "created", name: "new" });
        expect(heard).toHaveLength(1);
      });
    });
  });
}
