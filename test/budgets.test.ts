// Budgets and rates over HTTP (CONTRACTS §3, §7): an app's or key's `maxUsagePoints` spent → 429
// insufficient_quota; `qpm` exceeded → 429 rate_limit_exceeded with Retry-After; concurrent requests
// overshoot a budget by no more than those already in flight.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { APP2_KEY, chatOk, expectError, gatewayConfig, postChat, statusOf, user, type ConfigParts } from "./support/fixtures.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

// m1 costs charsPointsPrice 2 per 1,000 tokens: 500 + 500 tokens = 2 points a request
const POINTS_PER_REQUEST = 2;

let upstream: Upstream;
let gw: StartedGateway | undefined;

beforeAll(async () => {
  upstream = await startUpstream({ usage: { prompt_tokens: 500, completion_tokens: 500 } });
});
afterAll(() => upstream.close());
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  upstream.reset();
});

async function start(parts: ConfigParts): Promise<StartedGateway> {
  gw = await startGateway(gatewayConfig(upstream.url, parts));
  return gw;
}

const ask = (url: string, key?: string) => postChat(url, { messages: [user("how much?")] }, key);

async function expectRefused(res: Response, code: string, type: string): Promise<Response> {
  expect((await expectError(res, 429, code)).type).toBe(type);
  return res;
}

describe("points budgets", () => {
  it("refuses the next chat with 429 insufficient_quota once the app's maxUsagePoints is spent", async () => {
    const { url, store } = await start({ app: { maxUsagePoints: 5 } });
    for (let i = 0; i < 3; i++) await chatOk(url, { messages: [user(`q${i}`)] });
    expect(await store.getSpent("app:a1")).toBe(3 * POINTS_PER_REQUEST);

    await expectRefused(await ask(url), "insufficient_quota", "insufficient_quota");
    expect(upstream.requests).toHaveLength(3);
    // another app has its own budget
    expect((await ask(url, APP2_KEY)).status).toBe(200);
  });

  it("refuses the next chat with 429 insufficient_quota once the key's maxUsagePoints is spent", async () => {
    const { url } = await start({ key: { maxUsagePoints: 3 } });
    await chatOk(url, { messages: [user("one")] });
    await chatOk(url, { messages: [user("two")] });
    const res = await expectRefused(await ask(url), "insufficient_quota", "insufficient_quota");
    expect(res.headers.get("retry-after")).toBeNull();
    expect(upstream.requests).toHaveLength(2);
  });

  it("refuses all of 10 parallel requests once 3 earlier requests have spent the budget", async () => {
    const { url, store } = await start({ app: { maxUsagePoints: 5 } });
    const first = await Promise.all([0, 1, 2].map(() => statusOf(ask(url))));
    expect(first).toEqual([200, 200, 200]);

    const later = await Promise.all(Array.from({ length: 10 }, () => ask(url)));
    for (const res of later) await expectRefused(res, "insufficient_quota", "insufficient_quota");
    expect(upstream.requests).toHaveLength(3);
    expect(await store.getSpent("app:a1")).toBe(3 * POINTS_PER_REQUEST);
  });

  it("overshoots the budget by no more than the requests in flight when it runs out", async () => {
    const { url, store } = await start({ app: { maxUsagePoints: 5 } });
    await chatOk(url, { messages: [user("warm up")] });
    upstream.behave({ firstByteDelayMs: 100 });

    // 6 in flight at once, all admitted with 2 of 5 points spent
    const inFlight = Array.from({ length: 6 }, () => ask(url));
    await upstream.waitForRequests(1 + 6);
    const statuses = await Promise.all(inFlight.map(statusOf));
    const answered = statuses.filter((s) => s === 200).length;
    expect(answered).toBeLessThanOrEqual(6);
    expect(await store.getSpent("app:a1")).toBe((1 + answered) * POINTS_PER_REQUEST);

    await expectRefused(await ask(url), "insufficient_quota", "insufficient_quota");
    expect(upstream.requests).toHaveLength(1 + 6);
  });
});

describe("requests per minute", () => {
  it("refuses the third request in a minute with 429 rate_limit_exceeded and a Retry-After in seconds", async () => {
    const { url } = await start({ app: { qpm: 2 } });
    await chatOk(url, { messages: [user("one")] });
    await chatOk(url, { messages: [user("two")] });

    const res = await expectRefused(await ask(url), "rate_limit_exceeded", "rate_limit_error");
    const retryAfter = res.headers.get("retry-after");
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    expect(upstream.requests).toHaveLength(2);
  });

  it("counts the rate per app: another app is not slowed by it", async () => {
    const { url } = await start({ app: { qpm: 1 } });
    await chatOk(url, { messages: [user("one")] });
    expect((await ask(url)).status).toBe(429);
    expect((await ask(url, APP2_KEY)).status).toBe(200);
  });
});
