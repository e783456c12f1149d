// Quotas by time over HTTP (docs/api.md#budgets), on a clock the test moves (no sleeping through a
// minute or a day): tokens per minute held at admission (prompt + max_tokens), settled to the actual,
// served until spent and refused 429 tpm_exceeded until the next minute; a day's points in a time
// zone that is not UTC, reset at its midnight, kept across a restart; keys that expire.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway, type StartOptions } from "./support/gateway.js";
import { APP_KEY, GLOBAL_KEY, expectError, gatewayConfig, postChat, useTempDir, user, type ConfigParts } from "./support/fixtures.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { ConfigError, parseConfig } from "../src/config/load.js";
import { countMessages } from "../src/tokens/counter.js";

const PROMPT = "how many tokens?";
const PROMPT_TOKENS = countMessages([user(PROMPT)] as never, "cl100k_base");
/** the upstream reports the prompt the gateway counted and all of max_tokens */
const WRITES_ALL = { usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 1000 }, honourMaxTokens: true };
/** Monday 5 January 2026, 12:00:15 UTC */
const NOON = Date.UTC(2026, 0, 5, 12, 0, 15);

const temp = useTempDir("sluice-time-quotas-");
let upstream: Upstream;
let gw: StartedGateway | undefined;
let now = NOON;
const clock = () => now;

beforeAll(async () => {
  upstream = await startUpstream(WRITES_ALL);
});
afterAll(() => upstream.close());
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  upstream.reset();
  now = NOON;
});

async function start(parts: ConfigParts, opts: StartOptions = {}): Promise<StartedGateway> {
  gw = await startGateway(gatewayConfig(upstream.url, parts), { clock, ...opts });
  return gw;
}
const ask = (url: string, maxTokens: number, key: string = APP_KEY) => postChat(url, { messages: [user(PROMPT)], max_tokens: maxTokens }, key);
const sentMaxTokens = () => upstream.last().body.max_tokens as number;

describe("tokens per minute", () => {
  it("holds prompt + max_tokens, serves the minute's rest with max_tokens lowered, then refuses 429 tpm_exceeded until the next minute", async () => {
    const { url } = await start({ key: { tpm: 1000 } });
    expect((await ask(url, 400)).status).toBe(200);
    expect((await ask(url, 400)).status).toBe(200);
    // 2 × (prompt + 400) spent: the third gets what is left less its prompt
    const last = await ask(url, 400);
    expect(last.status).toBe(200);
    expect(sentMaxTokens()).toBe(1000 - 2 * (PROMPT_TOKENS + 400) - PROMPT_TOKENS);
    expect(((await last.json()) as { choices: Array<{ finish_reason: string }> }).choices[0]!.finish_reason).toBe("length");

    const refused = await ask(url, 400);
    const error = await expectError(refused, 429, "tpm_exceeded");
    expect(error.type).toBe("rate_limit_error");
    expect(error.message).toContain("1000 tokens per minute");
    // the clock is 15 s into its minute
    expect(refused.headers.get("retry-after")).toBe("45");
    expect(upstream.requests).toHaveLength(3);

    now += 45_000;
    expect((await ask(url, 400)).status).toBe(200);
    expect(sentMaxTokens()).toBe(400);
  });

  it("settles each call to the tokens it used: small answers leave the minute's allowance to the next calls", async () => {
    const { url } = await start({ app: { tpm: 1000 } });
    upstream.behave({ usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 10 } });
    // each holds prompt + 900 while it runs, and spends prompt + 10: were holds kept, the later
    // ones would be sent less
    for (let i = 0; i < 3; i++) {
      expect((await ask(url, 900)).status).toBe(200);
      expect(sentMaxTokens()).toBe(900);
    }
  });

  it("holds a call's worst case while it runs: a concurrent call gets only what is left", async () => {
    const { url } = await start({ key: { tpm: 1000 } });
    upstream.behave({ firstByteDelayMs: 300 });
    const first = ask(url, 600);
    await upstream.waitForRequests(1);
    const second = await ask(url, 600);
    expect(second.status).toBe(200);
    // the first holds its prompt's bound (from its bytes, a little over its count) + 600
    expect(sentMaxTokens()).toBeLessThanOrEqual(1000 - (PROMPT_TOKENS + 600) - PROMPT_TOKENS);
    expect(sentMaxTokens()).toBeGreaterThan(1000 - 2 * (PROMPT_TOKENS + 600));
    expect((await first).status).toBe(200);
  });

  it("refuses once a prompt and one token no longer fit, and leaves other keys alone", async () => {
    const { url } = await start({ key: { tpm: 1000 } });
    upstream.behave({ usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: 999 - PROMPT_TOKENS } });
    expect((await ask(url, 1000)).status).toBe(200);
    // served with max_tokens lowered to the minute's tokens less the prompt, 999 spent
    await expectError(await ask(url, 5), 429, "tpm_exceeded");
    const other = await postChat(url, { messages: [user(PROMPT)], max_tokens: 5 }, "sk-test-app-key-2");
    expect(other.status).toBe(200);
  });
});

describe("every kind", () => {
  it("holds embeddings' and the Messages dialect's tokens in the key's minute too, refusing each in its own shape", async () => {
    const { url, store } = await start({
      app: { models: ["m1", "m2", "emb"] },
      key: { tpm: 1000 },
      extra: {
        channels: [
          { name: "up", baseUrl: upstream.url, key: "channel-key-123", models: ["m1", "m2"] },
          { name: "echo", type: "echo", models: ["emb"] },
        ],
        vectorModels: [{ model: "emb", charsPointsPrice: 2 }],
      },
    });
    const embed = () =>
      fetch(`${url}/v1/embeddings`, { method: "POST", headers: { authorization: `Bearer ${APP_KEY}`, "content-type": "application/json" }, body: JSON.stringify({ model: "emb", input: "lorem ipsum ".repeat(150) }) });
    const answers: number[] = [];
    for (let i = 0; i < 6; i++) answers.push((await embed()).status);
    // whole inputs or nothing: some answered, then refused until the next minute
    expect(answers.filter((s) => s === 200).length).toBeGreaterThan(0);
    expect(answers.at(-1)).toBe(429);
    const refused = await embed();
    expect((await expectError(refused, 429, "tpm_exceeded")).message).toContain("1000 tokens per minute");

    const messages = () =>
      fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": APP_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" },
        body: JSON.stringify({ model: "m1", max_tokens: 900, messages: [{ role: "user", content: PROMPT }] }),
      });
    // what embeddings left of the minute pays for a shorter answer, written whole: then nothing is left
    const served = await messages();
    expect(served.status).toBe(200);
    expect(sentMaxTokens()).toBeLessThan(900);
    expect(((await served.json()) as { stop_reason: string }).stop_reason).toBe("max_tokens");
    const anthropic = await messages();
    expect(anthropic.status).toBe(429);
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
    expect(anthropic.headers.get("retry-after")).toBe("45");

    now += 45_000;
    expect((await messages()).status).toBe(200);
    // what the minute held: the usage rows of the first minute never pass its tpm
    const minute = await store.summarizeUsage({ from: NOON - 15_000, to: NOON + 45_000 });
    expect(minute.totals.inputTokens + minute.totals.outputTokens).toBeLessThanOrEqual(1000);
  });
});

describe("period budgets", () => {
  // Europe/Berlin is UTC+1 in January: its midnight is 23:00 UTC
  const BERLIN = { server: { timezone: "Europe/Berlin" } };
  const BEFORE_MIDNIGHT = Date.UTC(2026, 0, 5, 22, 59, 0);
  /** (prompt + 1000) × 2 / 1000 points an ask of max_tokens 1000 */
  const ASK_POINTS = ((PROMPT_TOKENS + 1000) * 2) / 1000;

  it("spends a day's points in server.timezone, refuses 429 period_budget_exhausted naming its midnight, and resets then", async () => {
    now = BEFORE_MIDNIGHT;
    const { url, store } = await start({ key: { periodPoints: 5, period: "day" }, extra: BERLIN });
    expect((await ask(url, 1000)).status).toBe(200);
    expect((await ask(url, 1000)).status).toBe(200);
    // serve until spent: the day's rest pays for fewer tokens
    expect((await ask(url, 1000)).status).toBe(200);
    expect(sentMaxTokens()).toBeLessThan(1000);
    expect(await store.getSpent("key:k1@day:2026-01-05")).toBeLessThanOrEqual(5 + 1e-9);

    const refused = await ask(url, 1000);
    const error = await expectError(refused, 429, "period_budget_exhausted");
    expect(error.message).toContain("2026-01-05T23:00:00.000Z");
    expect(refused.headers.get("retry-after")).toBe("60");

    // 23:00 UTC is no UTC midnight, but Berlin's: a new day, a new budget
    now = Date.UTC(2026, 0, 5, 23, 0, 0);
    expect((await ask(url, 1000)).status).toBe(200);
    expect(await store.getSpent("key:k1@day:2026-01-06")).toBeCloseTo(ASK_POINTS, 9);
  });

  it("spends a share link's day for all its users together, telling them when it resets and naming no app or number", async () => {
    const { url } = await start({ extra: { shareLinks: [{ shareId: "pub", appId: "a1", periodPoints: 3, period: "day" }] } });
    const visit = (who: string) => postChat(url, { shareId: "pub", outLinkUid: who, messages: [user(PROMPT)] }, null);
    expect((await visit("ann")).status).toBe(200);
    expect((await visit("bob")).status).toBe(200);
    const refused = await visit("cy");
    const error = await expectError(refused, 429, "period_budget_exhausted");
    expect(error.message).toBe("This chat link has used up its allowance for this day; it resets at 2026-01-06T00:00:00.000Z.");
    expect(refused.headers.get("retry-after")).toBe(String(12 * 3600 - 15));
  });

  it("keeps a period's spend across a restart, and a month's budget spans its days", async () => {
    const parts = { app: { periodPoints: 3, period: "month" }, sqlitePath: temp.file("restart.db") };
    now = Date.UTC(2026, 0, 30, 10);
    let { url } = await start(parts);
    expect((await ask(url, 1000)).status).toBe(200);
    await gw!.close();
    gw = undefined;

    now = Date.UTC(2026, 0, 31, 10);
    ({ url } = await start(parts));
    // 3 points in January, about 2 spent before the restart: the rest only
    expect((await ask(url, 1000)).status).toBe(200);
    expect(sentMaxTokens()).toBeLessThan(1000);
    const refused = await ask(url, 1000);
    expect((await expectError(refused, 429, "period_budget_exhausted")).message).toContain("2026-02-01T00:00:00.000Z");
    expect(refused.headers.get("retry-after")).toBe(String(14 * 3600));
    now = Date.UTC(2026, 1, 1);
    expect((await ask(url, 1000)).status).toBe(200);
  });
});

describe("key expiry", () => {
  it("refuses a config key past its expiresAt with 401 key_expired, on every route", async () => {
    const { url } = await start({ key: { expiresAt: "2026-01-05T12:30:00Z" } });
    expect((await ask(url, 10)).status).toBe(200);
    now = Date.UTC(2026, 0, 5, 12, 30);
    const error = await expectError(await ask(url, 10), 401, "key_expired");
    expect(error.message).toContain("2026-01-05T12:30:00.000Z");
    await expectError(await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${APP_KEY}` } }), 401, "key_expired");
    // others go on
    expect((await fetch(`${url}/api/v1/usage`, { headers: { authorization: `Bearer ${GLOBAL_KEY}` } })).status).toBe(200);
  });

  it("creates keys with expiresAt, tpm and a period budget through the keys API; a bad expiresAt is a 400", async () => {
    const ADMIN = "sk-test-admin-key-9";
    const raw = gatewayConfig(upstream.url) as { apiKeys: unknown[] };
    raw.apiKeys.push({ name: "root", kind: "admin", key: ADMIN });
    gw = await startGateway(raw, { clock });
    const admin = (body: unknown) =>
      fetch(`${gw!.url}/api/admin/keys`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    await expectError(await admin({ name: "bad", kind: "app", appId: "a1", expiresAt: "next week" }), 400, "invalid_request");
    const res = await admin({ name: "contractor", kind: "app", appId: "a1", expiresAt: "2026-01-31T00:00:00Z", tpm: 500, periodPoints: 1, period: "week" });
    expect(res.status).toBe(201);
    const made = (await res.json()) as { key: string; expiresAt: string };
    expect(made.expiresAt).toBe("2026-01-31T00:00:00.000Z");
    expect((await ask(gw.url, 10, made.key)).status).toBe(200);
    expect((await ask(gw.url, 1000, made.key)).status).toBe(200);
    expect(sentMaxTokens()).toBe(500 - (PROMPT_TOKENS + 10) - PROMPT_TOKENS);
    now = Date.UTC(2026, 0, 31);
    await expectError(await ask(gw.url, 10, made.key), 401, "key_expired");
  });
});


describe("quotas by time in config.json", () => {
  it("refuses an unknown time zone, a period other than day, week or month and a bad expiresAt, naming each path", () => {
    const raw = gatewayConfig("http://127.0.0.1:9", { key: { period: "year", expiresAt: "tomorrow" }, app: { tpm: -1 }, extra: { server: { timezone: "Mars/Olympus" } } });
    let problems: string[] = [];
    try {
      parseConfig(raw);
    } catch (err) {
      problems = err instanceof ConfigError ? err.problems : [];
    }
    expect(problems.join("\n")).toMatch(/server\.timezone: expected an IANA time zone name/);
    expect(problems.join("\n")).toMatch(/apiKeys\[0\]\.period:/);
    expect(problems.join("\n")).toMatch(/apiKeys\[0\]\.expiresAt:/);
    expect(problems.join("\n")).toMatch(/apps\[0\]\.tpm:/);
  });
});
