// GET /api/v1/usage (docs/api.md#usage, docs/api.md#metering): totals and per-app, per-model sums for a
// global key, its from/to/appId filters and refusals; and one persistent usage row per upstream call,
// failures too.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { UsageRow, UsageSummary, UsageTotals } from "../src/store/types.js";
import { APP2_KEY, APP_KEY, GLOBAL_KEY, chatOk, expectError, gatewayConfig, postChat, useGatewayAndUpstream, useTempDir, user } from "./support/fixtures.js";
import { startGateway } from "./support/gateway.js";
import type { UpstreamUsage } from "./support/upstream.js";

const h = useGatewayAndUpstream();

function getUsage(query: string, key: string | null = GLOBAL_KEY): Promise<Response> {
  return fetch(`${h.gw.url}/api/v1/usage${query}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
}

async function usageOk(query = ""): Promise<UsageSummary> {
  const res = await getUsage(query);
  expect(res.status).toBe(200);
  return (await res.json()) as UsageSummary;
}

/** `count` chats through `key` on `model`, each answered with `usage`. */
async function send(count: number, key: string, model: string, usage: UpstreamUsage): Promise<void> {
  h.upstream.behave({ usage });
  for (let i = 0; i < count; i++) await chatOk(h.gw.url, { model, messages: [user(`${model} ${i}`)] }, key);
}

const totals = (requests: number, inputTokens: number, outputTokens: number, points: number): UsageTotals => ({
  requests,
  inputTokens,
  outputTokens,
  points: expect.closeTo(points, 9) as unknown as number,
});

describe("usage report", () => {
  // a1: 2 × m1 (10 in, 20 out) and 1 × m2 (100 in, 200 out); a2: 3 × m1 (1 in, 2 out)
  // m1 points = 2 × (in + out) / 1000; m2 points = 3 × in / 1000 + 5 × out / 1000
  async function sendTraffic(): Promise<void> {
    await send(2, APP_KEY, "m1", { prompt_tokens: 10, completion_tokens: 20 });
    await send(1, APP_KEY, "m2", { prompt_tokens: 100, completion_tokens: 200 });
    await send(3, APP2_KEY, "m1", { prompt_tokens: 1, completion_tokens: 2 });
  }

  it("sums requests, tokens and points in all, per app and per model", async () => {
    await sendTraffic();
    expect(await usageOk()).toEqual({
      totals: totals(6, 123, 246, 0.12 + 1.3 + 0.018),
      apps: [{ appId: "a1", ...totals(3, 120, 240, 0.12 + 1.3) }, { appId: "a2", ...totals(3, 3, 6, 0.018) }],
      models: [{ model: "m1", ...totals(5, 23, 46, 0.12 + 0.018) }, { model: "m2", ...totals(1, 100, 200, 1.3) }],
    });
  });

  it("reports one app with appId", async () => {
    await sendTraffic();
    expect(await usageOk("?appId=a2")).toEqual({
      totals: totals(3, 3, 6, 0.018),
      apps: [{ appId: "a2", ...totals(3, 3, 6, 0.018) }],
      models: [{ model: "m1", ...totals(3, 3, 6, 0.018) }],
    });
  });

  it("reports the rows between from and to, given as ISO dates or epoch milliseconds", async () => {
    const row = (time: string, appId: string, points: number): UsageRow => ({
      time: Date.parse(time), appId, keyName: null, shareId: null, model: "m1", channel: "up",
      inputTokens: 1, outputTokens: 1, points, status: 200, durationMs: 5, chatId: null, finishReason: "stop", cachedTokens: 0,
    });
    await h.gw.store.recordUsage(row("2024-01-01T00:00:00Z", "a1", 1), []);
    await h.gw.store.recordUsage(row("2024-01-02T00:00:00Z", "a1", 2), []);
    await h.gw.store.recordUsage(row("2024-01-03T00:00:00Z", "a2", 4), []);

    const iso = await usageOk("?from=2024-01-01T12:00:00Z&to=2024-01-03T12:00:00Z");
    expect(iso.totals).toEqual(totals(2, 2, 2, 6));
    const ms = await usageOk(`?from=${Date.parse("2024-01-01T12:00:00Z")}&to=${Date.parse("2024-01-02T12:00:00Z")}`);
    expect(ms.totals).toEqual(totals(1, 1, 1, 2));
    expect((await usageOk("?from=2024-01-01T12:00:00Z&appId=a2")).totals).toEqual(totals(1, 1, 1, 4));
    expect((await usageOk("?to=2024-01-01T12:00:00Z")).apps).toEqual([{ appId: "a1", ...totals(1, 1, 1, 1) }]);
  });

  it("groups by finish reason with groupBy=finishReason, and refuses a groupBy it does not know with 400", async () => {
    h.upstream.behave({ text: "never finished", chunks: 4, cutAfterChunks: 2 });
    expect(await (await postChat(h.gw.url, { stream: true, messages: [user("cut short")] })).text()).toContain('"error"');
    h.upstream.behave({ cutAfterChunks: null });
    await chatOk(h.gw.url, { messages: [user("whole")] });
    await chatOk(h.gw.url, { messages: [user("whole again")] });
    h.upstream.behave({ status: 500 });
    expect((await postChat(h.gw.url, { messages: [user("fails")] })).status).toBe(502);

    const grouped = await usageOk("?groupBy=finishReason&appId=a1");
    expect(grouped.totals.requests).toBe(4);
    expect(grouped.finishReasons?.map((r) => [r.finishReason, r.requests])).toEqual([[null, 1], ["stop", 2], ["upstream_error", 1]]);
    expect(await usageOk("?appId=a1")).not.toHaveProperty("finishReasons");
    for (const bad of ["colour", "", "finishreason", "model,"]) {
      const refused = await expectError(await getUsage(`?groupBy=${bad}`), 400, "invalid_request");
      expect(refused.param).toBe("groupBy");
    }
  });

  it("answers an empty period with zero totals", async () => {
    expect(await usageOk("?from=2000-01-01&to=2000-01-02")).toEqual({ totals: totals(0, 0, 0, 0), apps: [], models: [] });
  });

  it("refuses an app key with 403, no key with 401 and a bad from with 400", async () => {
    await expectError(await getUsage("", APP_KEY), 403, "global_key_required");
    await expectError(await getUsage("", null), 401, "missing_api_key");
    const bad = await expectError(await getUsage("?from=yesterday"), 400, "invalid_request");
    expect(bad.param).toBe("from");
  });
});

describe("usage rows", () => {
  const tmp = useTempDir("sluice-usage-");

  it("persists one row per upstream call, a failed one with its status and no tokens", async () => {
    const path = tmp.file("usage.db");
    const fileGw = await startGateway(gatewayConfig(h.upstream.url, { sqlitePath: path }));
    h.upstream.behave({ usage: { prompt_tokens: 10, completion_tokens: 20 } });
    await chatOk(fileGw.url, { chatId: "c1", messages: [user("ok")] });
    h.upstream.behave({ status: 500 });
    const failed = await postChat(fileGw.url, { chatId: "c1", messages: [user("fails")] });
    expect(failed.status).toBe(502);
    h.upstream.behave({ status: 503 });
    expect((await postChat(fileGw.url, { messages: [user("fails too")] }, APP2_KEY)).status).toBe(502);
    await fileGw.close();

    const db = new Database(path, { readonly: true });
    try {
      const rows = db
        .prepare("SELECT app_id, key_name, model, channel, status, input_tokens, output_tokens, points, chat_id FROM usage ORDER BY id")
        .all();
      expect(rows).toEqual([
        { app_id: "a1", key_name: "k1", model: "m1", channel: "up", status: 200, input_tokens: 10, output_tokens: 20, points: 0.06, chat_id: "c1" },
        { app_id: "a1", key_name: "k1", model: "m1", channel: "up", status: 502, input_tokens: 0, output_tokens: 0, points: 0, chat_id: "c1" },
        { app_id: "a2", key_name: "k2", model: "m1", channel: "up", status: 502, input_tokens: 0, output_tokens: 0, points: 0, chat_id: null },
      ]);
    } finally {
      db.close();
    }
  });

  it("keeps the prompt tokens the upstream served from its prefix cache, and reports them to the client", async () => {
    const path = tmp.file("cached.db");
    const fileGw = await startGateway(gatewayConfig(h.upstream.url, { sqlitePath: path }));
    h.upstream.behave({ usage: { prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 64 } } });
    const whole = (await chatOk(fileGw.url, { messages: [user("cached")] })) as { usage: Record<string, unknown> };
    expect(whole.usage).toEqual({ prompt_tokens: 100, completion_tokens: 5, total_tokens: 105, prompt_tokens_details: { cached_tokens: 64 } });
    const streamed = await postChat(fileGw.url, { stream: true, stream_options: { include_usage: true }, messages: [user("cached")] });
    expect(await streamed.text()).toContain(`"prompt_tokens_details":{"cached_tokens":64}`);
    // garbage or more than the prompt: never more cached than input
    h.upstream.behave({ usage: { prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 64 } } });
    await chatOk(fileGw.url, { messages: [user("too many")] });
    h.upstream.behave({ usage: { prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: "lots" } } });
    await chatOk(fileGw.url, { messages: [user("garbage")] });
    h.upstream.behave({ usage: { prompt_tokens: 10, completion_tokens: 5 } });
    await chatOk(fileGw.url, { messages: [user("none")] });
    await fileGw.close();

    const db = new Database(path, { readonly: true });
    try {
      const rows = db.prepare("SELECT input_tokens, cached_tokens FROM usage ORDER BY id").all();
      expect(rows).toEqual([
        { input_tokens: 100, cached_tokens: 64 },
        { input_tokens: 100, cached_tokens: 64 },
        { input_tokens: 10, cached_tokens: 10 },
        { input_tokens: 10, cached_tokens: 0 },
        { input_tokens: 10, cached_tokens: 0 },
      ]);
    } finally {
      db.close();
    }
  });
});
