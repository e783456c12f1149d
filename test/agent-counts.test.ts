// An agent's kept token counts are its own (docs/api.md#limits): a dialect's resent conversation is
// counted once and kept under the caller's own scope (`key:<name>`), never under the period its
// budget is spent in, so a key with a day's budget finds them again on the next day's turns.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { APP_KEY, gatewayConfig, user } from "./support/fixtures.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { countMessage, countedText } from "../src/tokens/counter.js";
import { historyCounts } from "../src/tokens/history-counts.js";

/** Monday 5 January 2026, 12:00 UTC */
const NOON = Date.UTC(2026, 0, 5, 12);
const DAY_MS = 24 * 60 * 60 * 1000;
/** 866 tokens in 6,000 bytes: by its bytes over what a day's 5 points pay for at m1's 2 points per
 *  1,000 tokens, so it is counted (in full) */
const HISTORY = "agent history ".repeat(430).trim();

let upstream: Upstream;
let gw: StartedGateway | undefined;
let now = NOON;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.close());
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  now = NOON;
});

const turn = (url: string, messages: unknown[]) =>
  fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": APP_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: "m1", max_tokens: 100, messages }),
  });

describe("an agent's kept counts", () => {
  it("are kept under the key, not its period budget's day, and found again the next day", async () => {
    gw = await startGateway(gatewayConfig(upstream.url, { key: { periodPoints: 5, period: "day" } }), { clock: () => now });
    const first = [{ role: "user", content: HISTORY }];
    expect((await turn(gw.url, first)).status).toBe(200);

    // before: kept under `key:k1@day:2026-01-05` (the last of the caller's limits: 866 there), and
    // under the key nothing: undefined
    const kept = historyCounts.forCaller("key:k1", "cl100k_base");
    const key = kept.keyOf(countedText(user(HISTORY)));
    expect(kept.get(key)).toBe(countMessage(user(HISTORY)));

    // the next day the same conversation is looked up where it was kept: a count made up here (over
    // the context) is what it is judged by, not a fresh count (before: 200, counted again under the
    // new day's scope)
    now += DAY_MS;
    kept.set(key, 5000);
    const next = await turn(gw.url, [...first, { role: "assistant", content: "ok" }, { role: "user", content: "go on" }]);
    expect(next.status).toBe(400);
    expect(((await next.json()) as { error: { message: string } }).error.message).toMatch(/prompt is too long/);
  });
});
