// The Store contract for channel records (FastGPT's AI Proxy API, docs/fastgpt.md#channels): numbers
// never given twice, ids config.json names kept, writes all or nothing, statuses by id; and usage
// rows read as call logs.
import { expect, it } from "vitest";
import type { Store, UsageRow, UsageSearch } from "../../src/store/types.js";

export function describeChannelContract(current: () => Store): void {
  it("numbers new channels past every id used so far, keeps the ids config.json gives, and adds a ref once", async () => {
    const store = current();
    const added = await store.addChannelRecords([
      { ref: "a", record: null, status: 1, createdAt: 10 },
      { ref: "b", id: 5, record: null, status: 1, createdAt: 10 },
    ]);
    expect(added.map((r) => [r.ref, r.id]).sort()).toEqual([
      ["a", 6],
      ["b", 5],
    ]);
    // a ref already known, and an id already taken, are left out
    expect(await store.addChannelRecords([{ ref: "a", record: null, status: 1, createdAt: 20 }, { ref: "c", id: 6, record: null, status: 1, createdAt: 20 }])).toEqual([]);
    expect((await store.addChannelRecords([{ ref: "api:x", record: '{"name":"x"}', status: 2, createdAt: 30 }]))[0]).toEqual({ id: 7, ref: "api:x", record: '{"name":"x"}', deleted: false, status: 2, createdAt: 30 });
  });

  it("writes records and tombstones together and sets statuses by id, an unknown id aside", async () => {
    const store = current();
    await store.addChannelRecords([
      { ref: "a", record: null, status: 1, createdAt: 10 },
      { ref: "b", record: null, status: 1, createdAt: 10 },
    ]);
    await store.writeChannelRecords([
      { ref: "a", record: '{"name":"a2"}', deleted: false },
      { ref: "b", record: null, deleted: true },
    ]);
    expect(await store.setChannelStatus([2, 99], 2)).toEqual([2]);
    expect(await store.listChannelRecords()).toEqual([
      { id: 1, ref: "a", record: '{"name":"a2"}', deleted: false, status: 1, createdAt: 10 },
      { id: 2, ref: "b", record: null, deleted: true, status: 2, createdAt: 10 },
    ]);
    // deleted rows keep their number: the next channel gets a new one
    await store.writeChannelRecords([{ ref: "a", record: null, deleted: false }]);
    expect((await store.addChannelRecords([{ ref: "c", record: null, status: 1, createdAt: 20 }]))[0]!.id).toBe(3);
  });
}

/** The Store contract for usage rows read as call logs and dashboard minutes (docs/fastgpt.md#call-logs). */
export function describeLogContract(current: () => Store): void {
  const row = (over: Partial<UsageRow>): UsageRow => ({
    time: T0, appId: "support", keyName: "web", shareId: null, model: "glm", channel: "local", inputTokens: 10, outputTokens: 5,
    points: 1.5, status: 200, durationMs: 30, chatId: null, finishReason: "stop", requestId: "r0", endpoint: "/v1/chat/completions",
    channelId: 4, attempts: 1, ttfbMs: 12, error: null, cachedTokens: 0, ...over,
  });
  const search = (over: Partial<UsageSearch> = {}): UsageSearch => ({ from: T0, to: T0 + 3 * MINUTE, order: { by: "time", desc: true }, limit: 10, offset: 0, ...over });

  it("searches usage rows by request id, channel (its number, or its name on older rows), model, status, app and key, with the total of every match", async () => {
    const store = current();
    await store.recordUsage(row({ requestId: "r1" }), []);
    await store.recordUsage(row({ time: T0 + MINUTE, requestId: "r2", status: 502, attempts: 2, error: "upstream_error: down", outputTokens: 0, cachedTokens: 7, user: "u1" }), []);
    await store.recordUsage(row({ time: T0 + 2 * MINUTE, requestId: "r3", channelId: null, model: "bge", keyName: null, shareId: "s" }), []);
    await store.recordUsage(row({ time: T0 + 4 * MINUTE, requestId: "late" }), []);
    const all = await store.searchUsage(search());
    expect(all.total).toBe(3);
    expect(all.rows.map((r) => r.requestId)).toEqual(["r3", "r2", "r1"]);
    expect(all.rows[1]).toMatchObject({ status: 502, attempts: 2, error: "upstream_error: down", channelId: 4, ttfbMs: 12, endpoint: "/v1/chat/completions", points: 1.5, cachedTokens: 7, user: "u1" });
    expect(all.rows[0]).toMatchObject({ channelId: null, keyName: null, shareId: "s" });
    const ids = async (over: Partial<UsageSearch>) => (await store.searchUsage(search(over))).rows.map((r) => r.requestId);
    expect(await ids({ requestId: "r2" })).toEqual(["r2"]);
    expect(await ids({ channel: { id: 4, name: "local" } })).toEqual(["r3", "r2", "r1"]);
    expect(await ids({ channel: { id: 4, name: "other" } })).toEqual(["r2", "r1"]);
    expect(await ids({ model: "bge" })).toEqual(["r3"]);
    expect(await ids({ status: "error" })).toEqual(["r2"]);
    expect(await ids({ status: "success", keyName: "web" })).toEqual(["r1"]);
    expect(await ids({ status: 502, appId: "support" })).toEqual(["r2"]);
    expect(await ids({ order: { by: "id", desc: false }, limit: 2, offset: 1 })).toEqual(["r2", "r3"]);
    expect((await store.searchUsage(search({ limit: 1 }))).total).toBe(3);
  });

  it("keeps a request's bodies by its usage row until their time, and purges them a few at a time", async () => {
    const store = current();
    const bodies = (key: string, time: number, expiresAt: number) => ({ key, time, request: '{"a":1}', response: "data: x", requestTruncated: true, responseTruncated: false, expiresAt });
    await store.recordUsage(row({ requestId: "r", bodiesKey: "kept", time: T0 }), []);
    await store.recordUsage(row({ requestId: "r", bodiesKey: "none", time: T0 }), []);
    await store.saveBodies(bodies("kept", T0, T0 + MINUTE));
    // the same key at another time is another request's
    await store.saveBodies(bodies("none", T0 + 1, T0 + MINUTE));
    const [kept, none] = (await store.searchUsage(search({ order: { by: "id", desc: false } }))).rows;
    expect(await store.getBodies(kept!.id, T0)).toEqual(bodies("kept", T0, T0 + MINUTE));
    expect(await store.getBodies(none!.id, T0)).toBeUndefined();
    expect(await store.getBodies(kept!.id, T0 + MINUTE)).toBeUndefined();
    await Promise.all(Array.from({ length: 16 }, (_, i) => store.saveBodies(bodies(`later-${i}`, Date.now(), Date.now() + MINUTE))));
    expect(await store.getBodies(kept!.id, 0)).toBeUndefined();
  });

  it("sums usage rows per minute, channel and model", async () => {
    const store = current();
    await store.recordUsage(row({}), []);
    await store.recordUsage(row({ time: T0 + 59_999, status: 429, attempts: 3, cachedTokens: 6 }), []);
    await store.recordUsage(row({ time: T0 + MINUTE, status: 503 }), []);
    await store.recordUsage(row({ time: T0 + MINUTE, model: "bge" }), []);
    const minutes = await store.usageByMinute({ from: T0, to: T0 + MINUTE });
    const minute = (over: Record<string, unknown>) => ({ minute: T0, channelId: 4, channel: "local", model: "glm", requests: 1, exceptions: 0, retries: 0, status4xx: 0, status5xx: 0, inputTokens: 10, outputTokens: 5, points: 1.5, durationMs: 30, ttfbMs: 12, cachedTokens: 0, cacheHits: 0, ...over });
    // by minute, then model (byte order)
    expect(minutes).toEqual([
      minute({ requests: 2, exceptions: 1, retries: 1, status4xx: 1, inputTokens: 20, outputTokens: 10, points: 3, durationMs: 60, ttfbMs: 24, cachedTokens: 6, cacheHits: 1 }),
      minute({ minute: T0 + MINUTE, model: "bge" }),
      minute({ minute: T0 + MINUTE, exceptions: 1, status5xx: 1 }),
    ]);
  });
}

const T0 = Date.UTC(2025, 0, 1);
const MINUTE = 60_000;
