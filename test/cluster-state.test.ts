// The in-process cluster state's parts (docs/api.md#budgets, docs/configuration.md#routing): rate windows
// exact to the second and O(1) per hit, and the circuit breaker's closed → open → half-open → closed cycle.
// The state's contract (budgets, windows at their edges) is test/support/cluster-contract.ts, run by
// quota.test.ts.
import { describe, expect, it } from "vitest";
import { Breaker } from "../src/cluster/breaker.js";
import { createMemoryClusterState } from "../src/cluster/memory.js";
import { RateWindow } from "../src/cluster/rate-window.js";
import { expectLikeTimestampList } from "./support/cluster-contract.js";

const T0 = Date.UTC(2025, 0, 1);

describe("rate windows", () => {
  it("counts exactly like a list of timestamps at one-second resolution, over a seeded random run", async () => {
    const window = new RateWindow();
    await expectLikeTimestampList((now, limit) => {
      const retryAfterMs = window.wait(now, limit);
      if (retryAfterMs === 0) window.count(now);
      return { allowed: retryAfterMs === 0, retryAfterMs };
    }, 20_000, 30);
  });
});

describe("circuit breaker", () => {
  it("opens after `failures` consecutive failures, lets one probe through after the cooldown, closes on success", () => {
    const b = new Breaker({ failures: 3, cooldownMs: 1000 });
    b.record(false, T0);
    b.record(false, T0);
    b.record(true, T0); // a success resets the count
    for (let i = 0; i < 3; i++) b.record(false, T0);
    expect(b.view.phase).toBe("open");
    expect(b.admit(T0 + 999)).toBe(false);
    expect(b.admit(T0 + 1000)).toBe(true); // the probe
    expect(b.view.phase).toBe("half_open");
    expect(b.admit(T0 + 1001)).toBe(false); // only one
    b.record(true, T0 + 1100);
    expect(b.view).toEqual({ phase: "closed", failures: 0, retryAt: 0 });
  });

  it("reopens on a failed probe with the cooldown doubled, up to 5 minutes, and honours a longer Retry-After", () => {
    const b = new Breaker({ failures: 1, cooldownMs: 100_000 });
    b.record(false, T0);
    let at = T0;
    const cooldowns: number[] = [];
    for (let i = 0; i < 4; i++) {
      at = b.view.retryAt;
      expect(b.admit(at)).toBe(true);
      b.record(false, at);
      cooldowns.push(b.view.retryAt - at);
    }
    expect(cooldowns).toEqual([200_000, 300_000, 300_000, 300_000]);

    const c = new Breaker({ failures: 1, cooldownMs: 1000 });
    c.record(false, T0, 60_000);
    expect(c.view.retryAt).toBe(T0 + 60_000);
  });

  it("caps an upstream's Retry-After at maxCooldownMs (default 5 minutes): Retry-After 999999 s opens it for 300 s", () => {
    const b = new Breaker({ failures: 1, cooldownMs: 1000 });
    b.record(false, T0, 999_999_000);
    expect(b.view.retryAt - T0).toBe(300_000);

    const state = createMemoryClusterState({ failures: 1, cooldownMs: 1000 });
    state.channelResult("local", false, T0, 999_999_000);
    expect(state.breaker("local")).toMatchObject({ phase: "open" });
    expect(state.breaker("local").retryAt - T0).toBe(300_000);
    expect(state.admitChannel("local", T0 + 300_000)).toBe(true); // the probe, 5 minutes on
  });

  it("takes maxCooldownMs as the cap of both the doubling and Retry-After, read at each use (a reload changes it)", () => {
    let opts = { failures: 1, cooldownMs: 10_000, maxCooldownMs: 25_000 };
    const b = new Breaker(() => opts);
    b.record(false, T0);
    const cooldowns: number[] = [];
    let at = T0;
    for (let i = 0; i < 3; i++) {
      at = b.view.retryAt;
      expect(b.admit(at)).toBe(true);
      b.record(false, at);
      cooldowns.push(b.view.retryAt - at);
    }
    expect(cooldowns).toEqual([20_000, 25_000, 25_000]);
    b.record(true, at);
    b.record(false, at, 60_000);
    expect(b.view.retryAt - at).toBe(25_000);
    opts = { ...opts, maxCooldownMs: 15_000 };
    b.record(true, at);
    b.record(false, at, 60_000);
    expect(b.view.retryAt - at).toBe(15_000);
  });
});
