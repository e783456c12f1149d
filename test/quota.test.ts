import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createQuota, type QuotaLimit } from "../src/chat/quota.js";
import { GatewayError } from "../src/http/errors.js";
import { createSqliteStore } from "../src/store/sqlite.js";
import type { Store, UsageRow } from "../src/store/types.js";

const T0 = Date.UTC(2025, 0, 1);
const app = (maxUsagePoints: number, qpm = 0): QuotaLimit => ({ scope: "app:support", label: "app", maxUsagePoints, qpm });
const key = (maxUsagePoints: number, qpm = 0): QuotaLimit => ({ scope: "key:web", label: "API key", maxUsagePoints, qpm });

function usage(points: number): UsageRow {
  return {
    time: T0, appId: "support", keyName: "web", shareId: null, model: "glm", channel: "local",
    inputTokens: 1, outputTokens: 1, points, status: 200, durationMs: 1, chatId: null,
  };
}

async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

let store: Store;
beforeEach(() => {
  store = createSqliteStore(":memory:");
});
afterEach(async () => {
  await store.close();
});

describe("points budgets", () => {
  it("refuses with 429 insufficient_quota once the budget is spent", async () => {
    const quota = createQuota(store);
    const first = await quota.admit([app(3), key(-1)], T0);
    first.settle(3);

    const err = await refusal(quota.admit([app(3), key(-1)], T0));
    expect(err.status).toBe(429);
    expect(err.code).toBe("insufficient_quota");
    expect(err.type).toBe("insufficient_quota");
    expect(err.message).toBe("app has used its points budget (3)");
  });

  it("starts from the persistent counter and does not count it twice after a restart", async () => {
    await store.recordUsage(usage(2), ["app:support"]);
    const quota = createQuota(store);
    const r = await quota.admit([app(5)], T0);
    await store.recordUsage(usage(2), ["app:support"]);
    r.settle(2);
    // 4 spent of 5: still admitted
    (await quota.admit([app(5)], T0)).release();

    const restarted = createQuota(store);
    expect(await store.getSpent("app:support")).toBe(4);
    (await restarted.admit([app(5)], T0)).settle(1);
    expect((await refusal(restarted.admit([app(5)], T0))).code).toBe("insufficient_quota");
  });

  it("settles into every budgeted scope of the request, shared across requests", async () => {
    const quota = createQuota(store);
    (await quota.admit([app(10), key(4)], T0)).settle(4);
    const err = await refusal(quota.admit([key(4)], T0));
    expect(err.message).toBe("API key has used its points budget (4)");
    (await quota.admit([app(10)], T0)).settle(6);
    expect((await refusal(quota.admit([app(10)], T0))).code).toBe("insufficient_quota");
  });

  it("overshoots no more than the requests in flight when the budget ran out", async () => {
    const quota = createQuota(store);
    const inFlight = await Promise.all(Array.from({ length: 5 }, () => quota.admit([app(10)], T0)));
    inFlight[0]!.settle(10);
    const refused = await Promise.allSettled(Array.from({ length: 20 }, () => quota.admit([app(10)], T0)));
    expect(refused.every((r) => r.status === "rejected")).toBe(true);
    for (const r of inFlight.slice(1)) r.settle(1);
    // 10 + the 4 already in flight; none of the 20 refused added anything
    expect((await refusal(quota.admit([app(14)], T0))).code).toBe("insufficient_quota");
    (await quota.admit([app(14.5)], T0)).release();
  });

  it("spends nothing for a released request, and a reservation ends once", async () => {
    const quota = createQuota(store);
    const r = await quota.admit([app(1)], T0);
    r.release();
    r.settle(5);
    const again = await quota.admit([app(1)], T0);
    again.settle(0.5);
    again.settle(0.5);
    (await quota.admit([app(1)], T0)).release();
  });

  it("refuses a budget of 0 and ignores a budget of -1", async () => {
    const quota = createQuota(store);
    expect((await refusal(quota.admit([app(0)], T0))).status).toBe(429);
    (await quota.admit([app(-1)], T0)).settle(1e9);
    (await quota.admit([app(-1)], T0)).release();
  });
});

describe("requests per minute", () => {
  it("refuses with 429 rate_limit_exceeded and a Retry-After in whole seconds", async () => {
    const quota = createQuota(store);
    (await quota.admit([key(-1, 2)], T0)).release();
    (await quota.admit([key(-1, 2)], T0 + 500)).release();
    const err = await refusal(quota.admit([key(-1, 2)], T0 + 30_200));
    expect(err.status).toBe(429);
    expect(err.code).toBe("rate_limit_exceeded");
    expect(err.type).toBe("rate_limit_error");
    expect(err.headers["Retry-After"]).toBe("30");
    expect(err.message).toContain("2 requests per minute");

    const late = await refusal(quota.admit([key(-1, 2)], T0 + 59_999));
    expect(late.headers["Retry-After"]).toBe("1");
    (await quota.admit([key(-1, 2)], T0 + 60_000)).release();
  });

  it("does not use up rate for a request its budget refuses", async () => {
    const quota = createQuota(store);
    (await quota.admit([app(1, 2)], T0)).settle(1);
    for (let i = 0; i < 3; i++) {
      expect((await refusal(quota.admit([app(1, 2)], T0))).code).toBe("insufficient_quota");
    }
    // the budget refusals left one of the two hits of the window free
    expect((await store.hitRate("app:support", 2, T0)).allowed).toBe(true);
    expect((await store.hitRate("app:support", 2, T0)).allowed).toBe(false);
  });
});
