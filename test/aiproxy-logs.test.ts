// FastGPT's call-log page and monitoring dashboard on Sluice (docs/fastgpt.md#call-logs): its client's
// queries (packages/service/thirdProvider/aiproxy/client.ts: logs.search, logs.detail, dashboard.get)
// against a real gateway; what they answer adds up to the usage rows exactly.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { APP_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-aiproxy-logs-admin-01";

let upstream: Upstream;
let g: StartedGateway;
let before = 0;
beforeAll(async () => {
  upstream = await startUpstream();
  const config = coreConfig(upstream.url) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  config.apiKeys.push({ name: "fastgpt", kind: "admin", key: ADMIN_KEY });
  for (const c of config.channels) c.healthCheck = { intervalMs: 0 };
  g = await startGateway({ ...config, routing: { maxAttempts: 1 } });
  before = Date.now();
  // three answers on m1, two on the echo model, one failure the model server gave
  for (let i = 0; i < 3; i++) expect((await chat(g.url, { model: "m1", messages: [userMessage(`q${i}`)] })).status).toBe(200);
  for (let i = 0; i < 2; i++) expect((await chat(g.url, { model: "echo", messages: [userMessage(`e${i}`)] })).status).toBe(200);
  upstream.behave({ status: 503 });
  expect((await chat(g.url, { model: "m1", messages: [userMessage("fails")] })).status).toBe(502);
  upstream.behave({ status: 200 });
  // refused before a model server: no log
  expect((await chat(g.url, { model: "m1", messages: [userMessage("no key")] }, "sk-wrong-key-000001")).status).toBe(401);
  await vi.waitFor(async () => expect((await g.store.summarizeUsage({})).totals.requests).toBe(6));
});
afterAll(async () => {
  await g?.close();
  await upstream?.close();
});

/** FastGPT's toQueryString: undefined and "" left out. */
function query(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}
async function get<T>(path: string): Promise<{ status: number; success: boolean; message?: string; data: T }> {
  const res = await fetch(g.url + path, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  return { status: res.status, ...((await res.json()) as { success: boolean; message?: string; data: T }) };
}

interface Log {
  id: number;
  request_id: string;
  request_at: number;
  created_at: number;
  model: string;
  channel: number;
  code: number;
  mode: number;
  endpoint: string;
  token_name: string;
  group: string;
  usage: { input_tokens: number; output_tokens: number; total_tokens: number; cached_tokens: number };
  used_amount: number;
  ttfb_milliseconds: number;
  retry_times?: number;
  content?: string;
  ip: string;
}

describe("logs search", () => {
  it("lists every usage row as a log, newest first, with the fields FastGPT shows", async () => {
    const res = await get<{ logs: Log[]; total: number }>(`/api/logs/search${query({ result_only: true, p: 1, per_page: 10 })}`);
    expect(res).toMatchObject({ status: 200, success: true });
    expect(res.data.total).toBe(6);
    const logs = res.data.logs;
    expect(logs.map((l) => [l.model, l.code, l.channel])).toEqual([
      ["m1", 502, 1],
      ["echo", 200, 2],
      ["echo", 200, 2],
      ["m1", 200, 1],
      ["m1", 200, 1],
      ["m1", 200, 1],
    ]);
    const ok = logs[5]!;
    expect(ok).toMatchObject({ mode: 1, endpoint: "/v1/chat/completions", token_name: "app-one", group: "a1", ip: "", usage: { input_tokens: 11, output_tokens: 13, total_tokens: 24 } });
    expect(ok.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(ok.created_at).toBeGreaterThanOrEqual(before);
    expect(ok.created_at - ok.request_at).toBeGreaterThanOrEqual(0);
    expect(ok.content).toBeUndefined();
    expect(logs[0]!.content).toMatch(/^upstream_error: /);
  });

  it("filters as FastGPT's log page asks: a request id, a channel, a model, success or error, a page", async () => {
    const all = (await get<{ logs: Log[] }>(`/api/logs/search`)).data.logs;
    const one = await get<{ logs: Log[]; total: number }>(`/api/logs/search${query({ result_only: true, request_id: all[3]!.request_id })}`);
    expect(one.data.logs.map((l) => l.id)).toEqual([all[3]!.id]);
    expect((await get<{ total: number }>(`/api/logs/search?channel=2&model_name=`)).data.total).toBe(2);
    expect((await get<{ total: number }>(`/api/logs/search${query({ model_name: "m1", code_type: "success" })}`)).data.total).toBe(3);
    expect((await get<{ total: number }>(`/api/logs/search${query({ code_type: "error" })}`)).data.total).toBe(1);
    expect((await get<{ total: number }>(`/api/logs/search${query({ group: "a1", token_name: "app-one" })}`)).data.total).toBe(6);
    const page = await get<{ logs: Log[]; total: number }>(`/api/logs/search${query({ p: 2, per_page: 4, order: "id-asc" })}`);
    expect(page.data).toMatchObject({ total: 6 });
    expect(page.data.logs.map((l) => l.id)).toEqual(all.slice(0, 2).map((l) => l.id).reverse());
    // the time range, in seconds as FastGPT's date picker sends it: none of these rows is a day old
    expect((await get<{ total: number }>(`/api/logs/search${query({ start_timestamp: Math.floor(before / 1000) - 86_400, end_timestamp: Math.floor(before / 1000) - 3_600 })}`)).data.total).toBe(0);
    expect(await get(`/api/logs/search?code_type=maybe`)).toMatchObject({ status: 400, success: false, message: "code_type: expected all, success or error" });
  });

  it("answers 404 record not found for a log's bodies when none were kept", async () => {
    expect(await get(`/api/logs/detail/1`)).toMatchObject({ status: 404, success: false, message: "record not found" });
  });
});

describe("dashboardv2", () => {
  it("sums the usage rows exactly, per channel and model, in buckets of the asked time zone", async () => {
    const usage = await g.store.summarizeUsage({});
    for (const timespan of ["minute", "hour", "day", "month"]) {
      const res = await get<Array<{ timestamp: number; summary: Array<Record<string, number | string>> }>>(`/api/dashboardv2/${query({ timezone: "Asia/Shanghai", timespan })}`);
      expect(res).toMatchObject({ status: 200, success: true });
      const items = res.data.flatMap((p) => p.summary);
      const sum = (field: string) => items.reduce((s, i) => s + Number(i[field]), 0);
      expect([sum("request_count"), sum("input_tokens"), sum("output_tokens"), sum("exception_count")]).toEqual([usage.totals.requests, usage.totals.inputTokens, usage.totals.outputTokens, 1]);
      expect(sum("status_5xx_count")).toBe(1);
      for (const p of res.data) expect(Number.isInteger(p.timestamp) && p.timestamp <= Date.now() / 1000).toBe(true);
    }
    const day = (await get<Array<{ timestamp: number }>>(`/api/dashboardv2/?timezone=Asia/Shanghai&timespan=day`)).data;
    // a day of Shanghai starts at 16:00 UTC
    for (const p of day) expect((p.timestamp * 1000) % 86_400_000).toBe(16 * 3_600_000);
    const echo = (await get<Array<{ summary: Array<{ channel_id: number; request_count: number; max_rpm: number }> }>>(`/api/dashboardv2/?channel=2&model=echo`)).data;
    expect(echo.flatMap((p) => p.summary).reduce((s, i) => s + i.request_count, 0)).toBe(2);
    expect(echo.flatMap((p) => p.summary).every((i) => i.channel_id === 2 && i.max_rpm >= 1)).toBe(true);
  });

  it("refuses an unknown timespan and any key but an admin key", async () => {
    expect(await get(`/api/dashboardv2/?timespan=week`)).toMatchObject({ status: 400, message: "timespan: expected minute, hour, day or month" });
    const res = await fetch(`${g.url}/api/dashboardv2/`, { headers: { authorization: `Bearer ${APP_KEY}` } });
    expect(res.status).toBe(403);
  });
});
