// The usage report's groups (docs/api.md#usage) against the usage rows themselves: chats from keys, a
// share link and named end users (`user`, `safety_identifier`, Anthropic's `metadata.user_id`) spread
// over hours on an injected clock; the report's groups by several columns at once, its days and hours
// in a time zone half an hour off UTC, and its CSV, each equal to what the rows in the SQLite file
// add up to (days and hours worked out here with another formatter).
import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APP2_KEY, APP_KEY, GLOBAL_KEY, expectError, gatewayConfig, postChat, useTempDir, user } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const temp = useTempDir("sluice-usage-report-");
const START = Date.UTC(2026, 0, 5, 20, 10);
let now = START;
let upstream: Upstream;
let gw: StartedGateway;
let dbPath: string;

interface Row {
  time: number;
  app_id: string;
  model: string;
  key_name: string | null;
  share_id: string | null;
  user: string | null;
  finish_reason: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  points: number;
}

beforeAll(async () => {
  upstream = await startUpstream({ usage: { prompt_tokens: 7, completion_tokens: 11 } });
  dbPath = temp.file("usage.db");
  const config = gatewayConfig(upstream.url, {
    sqlitePath: dbPath,
    extra: { shareLinks: [{ shareId: "pub", appId: "a1" }] },
  });
  gw = await startGateway(config, { clock: () => now });
  // 24 chats, 37 minutes apart (across the Kolkata midnight at 18:30 UTC + 24 h), from two keys, the
  // share link and end users named three ways; the second model now and then, a cut answer or two
  const users: Array<Record<string, unknown>> = [{}, { user: "ann" }, { safety_identifier: "bob" }, { metadata: { user_id: "cy, the 2nd" } }, { user: "=SUM(A1)" }];
  for (let i = 0; i < 24; i++) {
    now = START + i * 37 * 60_000;
    upstream.behave({ usage: { prompt_tokens: 7 + i, completion_tokens: 11 * (i % 3) + 1, prompt_tokens_details: { cached_tokens: i % 4 } } });
    const body = { messages: [user(`q${i}`)], max_tokens: 50, ...(i % 10 === 5 ? { model: "m2" } : {}), ...users[i % users.length] };
    const res =
      i % 6 === 5
        ? await postChat(gw.url, { ...body, shareId: "pub", outLinkUid: `visitor-${i % 2}` }, null)
        : await postChat(gw.url, body, i % 2 ? APP_KEY : APP2_KEY);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  }
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

function rows(): Row[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare("SELECT * FROM usage").all() as Row[];
  } finally {
    db.close();
  }
}

/** Local `YYYY-MM-DD HH` in `tz`, by a formatter of another locale than the gateway's. */
function local(ms: number, tz: string): { day: string; hour: string } {
  const text = new Intl.DateTimeFormat("sv-SE", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", hourCycle: "h23" }).format(ms);
  const [day, hour] = text.split(" ");
  return { day: day!, hour: `${day}T${hour}:00` };
}

type Group = Record<string, string | number | null>;

/** The groups the rows add up to, by `by`, sorted as the report sorts them. */
function expected(by: string[], tz: string): Group[] {
  const groups = new Map<string, Group>();
  for (const r of rows()) {
    const at = local(r.time, tz);
    const value: Record<string, string | null> = {
      app: r.app_id, model: r.model, kind: "chat", finishReason: r.finish_reason, key: r.key_name, share: r.share_id, user: r.user, day: at.day, hour: at.hour,
    };
    const id = JSON.stringify(by.map((b) => value[b]));
    const g = groups.get(id) ?? groups.set(id, { ...Object.fromEntries(by.map((b) => [b, value[b]!])), requests: 0, inputTokens: 0, outputTokens: 0, cachedTokens: 0, points: 0 }).get(id)!;
    (g.requests as number)++;
    (g.inputTokens as number) += r.input_tokens;
    (g.outputTokens as number) += r.output_tokens;
    (g.cachedTokens as number) += r.cached_tokens;
    (g.points as number) += r.points;
  }
  const cmp = (a: Group, b: Group) => {
    for (const k of by) {
      if (a[k] === b[k]) continue;
      if (a[k] === null) return -1;
      if (b[k] === null) return 1;
      return (a[k] as string) < (b[k] as string) ? -1 : 1;
    }
    return 0;
  };
  return [...groups.values()].sort(cmp);
}

const report = (query: string) => fetch(`${gw.url}/api/v1/usage?${query}`, { headers: { authorization: `Bearer ${GLOBAL_KEY}` } });

function expectGroups(actual: Group[], wanted: Group[]): void {
  expect(actual.map(({ points, ...g }) => g)).toEqual(wanted.map(({ points, ...g }) => g));
  actual.forEach((g, i) => expect(g.points).toBeCloseTo(wanted[i]!.points as number, 9));
}

describe("usage report groups", () => {
  it("names each row's end user and keeps cached tokens", () => {
    const users = new Set(rows().map((r) => r.user));
    // the share link's user by the digest of their localId (docs/store.md#share-link-users-in-usage-rows)
    const visitor = `sha256:${createHash("sha256").update("sluice share user|pub|visitor-1").digest("hex").slice(0, 32)}`;
    expect(users).toEqual(new Set([null, "ann", "bob", "cy, the 2nd", "=SUM(A1)", visitor]));
    expect(rows().some((r) => r.cached_tokens > 0)).toBe(true);
  });

  it.each([
    ["key,user,day", "Asia/Kolkata"],
    ["hour", "Asia/Kolkata"],
    ["day,model,kind", "America/New_York"],
    ["share,finishReason,app", "UTC"],
    ["user", "UTC"],
  ])("groupBy=%s in %s equals the rows' sums", async (groupBy, tz) => {
    const res = await report(`groupBy=${groupBy}&tz=${encodeURIComponent(tz)}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { groups: Group[]; totals: { requests: number } };
    expectGroups(body.groups, expected(groupBy.split(","), tz));
    expect(body.totals.requests).toBe(24);
  });

  it("keeps to from/to (ISO) and appId", async () => {
    const from = new Date(START + 5 * 37 * 60_000).toISOString();
    const to = new Date(START + 15 * 37 * 60_000).toISOString();
    const body = (await (await report(`groupBy=key&from=${from}&to=${to}&appId=a1`)).json()) as { groups: Group[] };
    const inRange = rows().filter((r) => r.time >= Date.parse(from) && r.time < Date.parse(to) && r.app_id === "a1");
    expect(body.groups.reduce((n, g) => n + (g.requests as number), 0)).toBe(inRange.length);
    expect(body.groups.map((g) => g.key)).toEqual([...new Set(inRange.map((r) => r.key_name))].sort((a, b) => (a === null ? -1 : b === null ? 1 : a < b ? -1 : 1)));
  });

  it("answers CSV: a header, then a line per group equal to the rows' sums; formulas defused, commas quoted", async () => {
    const res = await report("groupBy=user,day&tz=Asia/Kolkata&format=csv");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const lines = parseCsv(await res.text());
    expect(lines[0]).toEqual(["user", "day", "requests", "inputTokens", "outputTokens", "cachedTokens", "points"]);
    const wanted = expected(["user", "day"], "Asia/Kolkata");
    expect(lines).toHaveLength(wanted.length + 1);
    wanted.forEach((g, i) => {
      const [u, day, requests, input, output, cached, points] = lines[i + 1]!;
      expect(u).toBe(g.user === null ? "" : g.user === "=SUM(A1)" ? "'=SUM(A1)" : g.user);
      expect([day, Number(requests), Number(input), Number(output), Number(cached)]).toEqual([g.day, g.requests, g.inputTokens, g.outputTokens, g.cachedTokens]);
      expect(Number(points)).toBeCloseTo(g.points as number, 9);
    });
  });

  it("refuses an unknown groupBy, a repeated one, a bad tz and a bad format with 400 naming the parameter", async () => {
    expect((await expectError(await report("groupBy=key,colour"), 400, "invalid_request")).param).toBe("groupBy");
    expect((await expectError(await report("groupBy=key,key"), 400, "invalid_request")).param).toBe("groupBy");
    expect((await expectError(await report("groupBy=day&tz=Mars/Olympus"), 400, "invalid_request")).param).toBe("tz");
    expect((await expectError(await report("format=xml"), 400, "invalid_request")).param).toBe("format");
    await expectError(await fetch(`${gw.url}/api/v1/usage?groupBy=key`, { headers: { authorization: `Bearer ${APP_KEY}` } }), 403, "global_key_required");
  });
});

/** RFC 4180 lines (quoted fields with "" for a quote). */
function parseCsv(text: string): string[][] {
  return text
    .split("\r\n")
    .filter((line) => line !== "")
    .map((line) => [...line.matchAll(/("(?:[^"]|"")*"|[^,]*)(?:,|$)/g)].slice(0, -1).map((m) => (m[1]!.startsWith('"') ? m[1]!.slice(1, -1).replaceAll('""', '"') : m[1]!)));
}

