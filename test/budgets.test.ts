// Budgets and rates over HTTP (docs/api.md#budgets): serve until spent — a request whose worst case
// (prompt + n × max_tokens) does not fit what is left of an app's or key's `maxUsagePoints` is sent
// with the max_tokens the rest pays for, and refused 429 insufficient_quota only when not even the
// prompt and one token fit; `qpm` exceeded → 429 rate_limit_exceeded with Retry-After; concurrent
// requests cannot overshoot a budget; `n` and length fields cannot escape it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { APP2_KEY, chatOk, expectError, gatewayConfig, postChat, statusOf, user, type ConfigParts } from "./support/fixtures.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { countMessages } from "../src/tokens/counter.js";

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

const PROMPT = "how much?";
/** what the gateway counts for the prompt of `ask`: an upstream reporting it keeps billing exact */
const PROMPT_TOKENS = countMessages([user(PROMPT)] as never, "cl100k_base");
/** a whole `ask` against an upstream writing all of max_tokens (1,000): (prompt + 1000) × 2 / 1000 */
const ASK_POINTS = ((PROMPT_TOKENS + 1000) * 2) / 1000;
/** what the upstream reports: the prompt the gateway counted, all of max_tokens (honoured) */
const WRITES_ALL = { usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 1000 }, honourMaxTokens: true };
const ask = (url: string, key?: string) => postChat(url, { messages: [user(PROMPT)] }, key);

async function expectRefused(res: Response, code: string, type: string): Promise<Response> {
  expect((await expectError(res, 429, code)).type).toBe(type);
  return res;
}

describe("points budgets: serve until spent, never past", () => {
  it("serves the last request with the max_tokens the rest pays for (ending length), then refuses the next with 429", async () => {
    // a budget of 7 and requests of 2: three whole ones, then one of the 1 point left
    const { url, store } = await start({ app: { maxUsagePoints: 7 } });
    upstream.behave(WRITES_ALL);
    for (let i = 0; i < 3; i++) expect((await ask(url)).status).toBe(200);
    expect(await store.getSpent("app:a1")).toBeCloseTo(3 * ASK_POINTS, 9);

    // before: 429 insufficient_quota, the whole max_tokens (1,000) not payable
    const last = await ask(url);
    expect(last.status).toBe(200);
    const answer = (await last.json()) as { choices: Array<{ finish_reason: string }> };
    expect(answer.choices[0]!.finish_reason).toBe("length");
    const asked = upstream.last().body.max_tokens as number;
    const payable = Math.floor((7 - 3 * ASK_POINTS) / 0.002) - PROMPT_TOKENS;
    expect(asked).toBeGreaterThanOrEqual(payable - 1);
    expect(asked).toBeLessThanOrEqual(payable);
    const spent = await store.getSpent("app:a1");
    expect(spent).toBeLessThanOrEqual(7 + 1e-9);
    expect(spent).toBeGreaterThan(7 - 0.002);

    await expectRefused(await ask(url), "insufficient_quota", "insufficient_quota");
    expect(upstream.requests).toHaveLength(4);
    // another app has its own budget
    expect((await ask(url, APP2_KEY)).status).toBe(200);
  });

  it("refuses with 429 insufficient_quota only when the prompt and one token do not fit; a key's budget the same", async () => {
    const { url } = await start({ key: { maxUsagePoints: 5 } });
    upstream.behave(WRITES_ALL);
    // 5 points: two whole asks, then the rest
    for (let i = 0; i < 3; i++) expect((await ask(url)).status).toBe(200);
    const res = await expectRefused(await ask(url), "insufficient_quota", "insufficient_quota");
    expect(res.headers.get("retry-after")).toBeNull();
    expect(upstream.requests).toHaveLength(3);
  });

  it("refuses all of 10 parallel requests once the budget is spent", async () => {
    const { url, store } = await start({ app: { maxUsagePoints: 6 } });
    for (let i = 0; i < 3; i++) await chatOk(url, { messages: [user(`q${i}`)] });

    const later = await Promise.all(Array.from({ length: 10 }, () => ask(url)));
    for (const res of later) await expectRefused(res, "insufficient_quota", "insufficient_quota");
    expect(upstream.requests).toHaveLength(3);
    expect(await store.getSpent("app:a1")).toBe(3 * POINTS_PER_REQUEST);
  });

  it("never spends past the budget with 200 requests at once: worst cases (or what is left) are held at admission", async () => {
    const { url, store } = await start({ app: { maxUsagePoints: 9 } });
    upstream.behave({ firstByteDelayMs: 50, ...WRITES_ALL });
    const statuses = await Promise.all(Array.from({ length: 200 }, () => statusOf(ask(url))));
    const answered = statuses.filter((s) => s === 200).length;
    // 4 whole worst cases of a little over 2 points, then what is left (a hold made from the prompt's
    // bound may leave a few points that a later request is served with)
    expect(answered).toBeGreaterThanOrEqual(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - answered);
    const asked = upstream.requests.map((r) => r.body.max_tokens as number);
    expect(asked.filter((t) => t === 1000)).toHaveLength(4);
    expect(asked.filter((t) => t < 1000)).toHaveLength(answered - 4);
    expect(upstream.requests).toHaveLength(answered);
    // what the holds left unspent (a hold made from the prompt's bound) is served to whoever asks
    // next, until not even the prompt and one token fit: how much that is depends on when the
    // burst's answers settled, never past the budget
    let later = 0;
    while ((await statusOf(ask(url))) === 200) expect(++later).toBeLessThan(5);
    const spent = await store.getSpent("app:a1");
    expect(spent).toBeLessThanOrEqual(9 + 1e-9);
    expect(9 - spent).toBeLessThan(((PROMPT_TOKENS + 1) * 2) / 1000);
    expect(upstream.requests).toHaveLength(answered + later);
  });
});

describe("choices (n) and fields that set the length", () => {
  it("holds every choice's max_tokens: n: 20 on a budget of 3 cannot spend past it (before: 40 of 3)", async () => {
    const { url, store } = await start({ key: { maxUsagePoints: 3 }, extra: { llmModels: [{ model: "m1", maxContext: 4000, maxResponse: 1000, charsPointsPrice: 2, maxChoices: 20 }, { model: "m2" }] } });
    upstream.behave({ usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 20_000 }, honourMaxTokens: true });
    const statuses = await Promise.all(Array.from({ length: 4 }, () => statusOf(postChat(url, { messages: [user(PROMPT)], n: 20 }))));
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(await store.getSpent("key:k1")).toBeLessThanOrEqual(3 + 1e-9);
    for (const r of upstream.requests) expect((r.body.max_tokens as number) * 20).toBeLessThanOrEqual(1500);
  });

  it("refuses n over the model's maxChoices (default 4) with 400 naming n; the upstream is never called", async () => {
    const { url } = await start({});
    const error = await expectError(await postChat(url, { messages: [user("hi")], n: 5 }), 400, "invalid_request");
    expect(error.param).toBe("n");
    expect((await postChat(url, { messages: [user("hi")], n: 4 })).status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.last().body.n).toBe(4);
  });

  it("sends only OpenAI's chat fields and the model's passThrough list; best_of, max_new_tokens, min_tokens … never", async () => {
    const { url } = await start({ extra: { llmModels: [{ model: "m1", charsPointsPrice: 2, passThrough: ["top_k", "min_p", "chat_template_kwargs"] }, { model: "m2" }] } });
    const sent = { messages: [user("hi")], top_p: 0.9, seed: 7, top_k: 40, min_p: 0.1, chat_template_kwargs: { enable_thinking: false }, repetition_penalty: 1.1, best_of: 20, max_new_tokens: 100_000, min_tokens: 5000, max_length: 9999 };
    expect((await postChat(url, sent)).status).toBe(200);
    const body = upstream.last().body;
    expect(body).toMatchObject({ top_p: 0.9, seed: 7, top_k: 40, min_p: 0.1, chat_template_kwargs: { enable_thinking: false } });
    for (const field of ["repetition_penalty", "best_of", "max_new_tokens", "min_tokens", "max_length"]) expect(body).not.toHaveProperty(field);
  });

  it("refuses a length field in passThrough at start, naming its path", async () => {
    await expect(start({ extra: { llmModels: [{ model: "m1", passThrough: ["top_k", "best_of"] }, { model: "m2" }] } })).rejects.toThrow(/llmModels\[0\]\.passThrough\[1\]|llmModels\.0\.passThrough\.1/);
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
