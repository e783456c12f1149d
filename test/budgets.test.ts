// Budgets and rates over HTTP (CONTRACTS §7, §10): a request whose worst case (prompt + max_tokens)
// does not fit what is left of an app's or key's `maxUsagePoints` → 429 insufficient_quota; `qpm`
// exceeded → 429 rate_limit_exceeded with Retry-After; concurrent requests cannot overshoot a budget.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { APP2_KEY, chatOk, expectError, gatewayConfig, postChat, statusOf, user, type ConfigParts } from "./support/fixtures.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

// m1 costs charsPointsPrice 2 per 1,000 tokens: 500 + 500 tokens = 2 points a request; its worst
// case (a short prompt + max_tokens 1,000) is a little over 2 points
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
  it("refuses the next chat with 429 insufficient_quota once the app's budget cannot hold its worst case", async () => {
    const { url, store } = await start({ app: { maxUsagePoints: 7 } });
    for (let i = 0; i < 3; i++) await chatOk(url, { messages: [user(`q${i}`)] });
    expect(await store.getSpent("app:a1")).toBe(3 * POINTS_PER_REQUEST);

    await expectRefused(await ask(url), "insufficient_quota", "insufficient_quota");
    expect(upstream.requests).toHaveLength(3);
    // another app has its own budget
    expect((await ask(url, APP2_KEY)).status).toBe(200);
  });

  it("refuses the next chat with 429 insufficient_quota once the key's budget cannot hold its worst case", async () => {
    const { url } = await start({ key: { maxUsagePoints: 5 } });
    await chatOk(url, { messages: [user("one")] });
    await chatOk(url, { messages: [user("two")] });
    const res = await expectRefused(await ask(url), "insufficient_quota", "insufficient_quota");
    expect(res.headers.get("retry-after")).toBeNull();
    expect(upstream.requests).toHaveLength(2);
  });

  it("refuses all of 10 parallel requests once 3 earlier requests have spent the budget", async () => {
    const { url, store } = await start({ app: { maxUsagePoints: 7 } });
    for (let i = 0; i < 3; i++) await chatOk(url, { messages: [user(`q${i}`)] });

    const later = await Promise.all(Array.from({ length: 10 }, () => ask(url)));
    for (const res of later) await expectRefused(res, "insufficient_quota", "insufficient_quota");
    expect(upstream.requests).toHaveLength(3);
    expect(await store.getSpent("app:a1")).toBe(3 * POINTS_PER_REQUEST);
  });

  it("never spends past the budget with 200 requests at once: worst cases are held at admission", async () => {
    const { url, store } = await start({ app: { maxUsagePoints: 9 } });
    upstream.behave({ firstByteDelayMs: 50 });
    const statuses = await Promise.all(Array.from({ length: 200 }, () => statusOf(ask(url))));
    const answered = statuses.filter((s) => s === 200).length;
    expect(answered).toBe(4); // 4 worst cases of a little over 2 points fit in 9
    expect(statuses.filter((s) => s === 429)).toHaveLength(196);
    expect(await store.getSpent("app:a1")).toBe(4 * POINTS_PER_REQUEST);
    expect(upstream.requests).toHaveLength(4);
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
