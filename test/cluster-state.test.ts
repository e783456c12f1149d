// The in-process cluster state (CONTRACTS §9, §10): rate windows exact to the second at their
// edges and O(1) per hit, and the circuit breaker's closed → open → half-open → closed cycle.
import { describe, expect, it } from "vitest";
import { Breaker } from "../src/cluster/breaker.js";
import { createMemoryClusterState } from "../src/cluster/memory.js";
import { RateWindow } from "../src/cluster/rate-window.js";

const T0 = Date.UTC(2025, 0, 1);

describe("rate windows", () => {
  it("allows `limit` hits per 60 s and says when the oldest hit leaves the window", async () => {
    const state = createMemoryClusterState({ failures: 5, cooldownMs: 1000 });
    expect(await state.hitRate("key:web", 2, T0)).toEqual({ allowed: true, retryAfterMs: 0 });
    expect((await state.hitRate("key:web", 2, T0 + 1000)).allowed).toBe(true);
    expect(await state.hitRate("key:web", 2, T0 + 15_000)).toEqual({ allowed: false, retryAfterMs: 45_000 });
    // another scope has its own window
    expect((await state.hitRate("key:other", 2, T0 + 15_000)).allowed).toBe(true);
    // the first hit has left the window; the refused hit was not counted
    expect((await state.hitRate("key:web", 2, T0 + 60_000)).allowed).toBe(true);
    expect(await state.hitRate("key:web", 2, T0 + 60_500)).toEqual({ allowed: false, retryAfterMs: 500 });
  });

  it("counts exactly like a list of timestamps at one-second resolution, over a seeded random run", () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const window = new RateWindow();
    const hits: number[] = [];
    let now = T0;
    for (let i = 0; i < 20_000; i++) {
      now += Math.floor(random() * (random() < 0.01 ? 90_000 : 400));
      const second = Math.floor(now / 1000);
      while (hits.length > 0 && hits[0]! <= second - 60) hits.shift();
      const expected = hits.length < 30;
      const got = window.hit(now, 30);
      expect(got.allowed).toBe(expected);
      if (expected) hits.push(second);
      else expect(got.retryAfterMs).toBe((hits[0]! + 60) * 1000 - now);
    }
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
});
