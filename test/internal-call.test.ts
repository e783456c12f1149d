// A call Sluice makes itself (a batch line, docs/batches.md#how-lines-run) through gateway.call:
// its priority (aging never lifts it above an interactive call), its one channel, its usage row's
// batch and line, the row handed back instead of written, and pacing (no QPM, TPM or
// maxConcurrent, budgets held all the same); the usage columns on SQLite and PostgreSQL.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InternalCall } from "../src/metered/internal-call.js";
import { createStore } from "../src/store/index.js";
import type { UsageRow } from "../src/store/types.js";
import { ConnectionGate, type Release } from "../src/upstream/gate.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { usePostgres } from "./support/postgres.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-internal-call-test-01";
const POOR = "sk-internal-call-poor-01";
let one: Upstream;
let two: Upstream;
let gw: StartedGateway;
const written: UsageRow[] = [];

beforeAll(async () => {
  [one, two] = await Promise.all([startUpstream(), startUpstream()]);
  const store = createStore({ driver: "memory" });
  const record = store.recordUsage.bind(store);
  store.recordUsage = (row, scopes) => (written.push(row), record(row, scopes));
  const channel = (name: string, baseUrl: string) => ({ name, baseUrl, models: ["m"], healthCheck: { intervalMs: 0 } });
  gw = await startGateway(
    {
      channels: [channel("one", one.url), channel("two", two.url)],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500, charsPointsPrice: 1 }],
      routing: { maxAttempts: 2 },
      apps: [
        { id: "a", model: "m", models: ["m"], maxUsagePoints: 1_000_000, qpm: 1, tpm: 600, maxConcurrent: 1 },
        { id: "poor", model: "m", models: ["m"], maxUsagePoints: 0 },
      ],
      apiKeys: [
        { name: "k", kind: "app", appId: "a", key: KEY },
        { name: "p", kind: "app", appId: "poor", key: POOR },
      ],
    },
    { store },
  );
});
afterAll(async () => {
  await gw?.close();
  await gw?.store.close();
  await Promise.all([one, two].map((u) => u?.close()));
});

const line = (internal: InternalCall, key = KEY) =>
  gw.gateway.call("chat", {
    headers: { authorization: `Bearer ${key}` },
    path: "/v1/chat/completions",
    body: { model: "m", max_tokens: 50, messages: [{ role: "user", content: "hi" }] },
    internal,
  });

describe("a call Sluice makes itself", () => {
  it("hands its usage row, with the batch and line, to keepUsage instead of writing it", async () => {
    const kept: Array<{ row: UsageRow; scopes: string[] }> = [];
    const before = written.length;
    const spent = await gw.store.getSpent("app:a");
    const answer = await line({ batch: { id: "batch_1", customId: "line-7" }, keepUsage: (row, scopes) => kept.push({ row, scopes }), paced: true });
    expect(answer.status).toBe(200);
    expect(kept).toHaveLength(1);
    expect(kept[0]!.row).toMatchObject({ batchId: "batch_1", customId: "line-7", appId: "a", keyName: "k", status: 200 });
    expect(kept[0]!.row.points).toBeGreaterThan(0);
    expect(kept[0]!.scopes).toEqual(["app:a", "key:k"]);
    // nothing written by the gateway: the caller writes row and spend in its own commit
    expect(written.length).toBe(before);
    expect(await gw.store.getSpent("app:a")).toBe(spent);
  });

  it("posts to its one channel only, and a failure there is not tried elsewhere", async () => {
    const [a, b] = [one.requests.length, two.requests.length];
    const kept: UsageRow[] = [];
    const ok = await line({ channel: "two", keepUsage: (row) => kept.push(row), paced: true });
    expect(ok.status).toBe(200);
    expect(kept[0]!.channel).toBe("two");
    expect([one.requests.length - a, two.requests.length - b]).toEqual([0, 1]);
    two.behave({ status: 500 });
    try {
      const failed = await line({ channel: "two", keepUsage: (row) => kept.push(row), paced: true });
      expect(failed.status).toBeGreaterThanOrEqual(500);
      expect(one.requests.length - a).toBe(0);
      expect(kept.at(-1)!.status).toBe(failed.status);
    } finally {
      two.reset();
    }
    const unknown = await line({ channel: "nowhere", paced: true });
    expect(unknown.status).toBe(404);
    expect((unknown.body as { error: { code: string } }).error.code).toBe("channel_not_found");
  });

  it("is paced: QPM, TPM and maxConcurrent do not apply, a budget does", async () => {
    // qpm 1, tpm 600, maxConcurrent 1: eight lines at once, each worth up to 50 output tokens
    const lines = await Promise.all(Array.from({ length: 8 }, () => line({ paced: true, keepUsage: () => {} })));
    expect(lines.map((l) => l.status)).toEqual(Array(8).fill(200));
    // the paced lines counted no QPM: the app's one call a minute is still there, then refused
    const unpaced = await line({ keepUsage: () => {} });
    expect(unpaced.status).toBe(200);
    const again = await line({ keepUsage: () => {} });
    expect(again.status).toBe(429);
    expect((again.body as { error: { code: string } }).error.code).toBe("rate_limit_exceeded");
    // a budget holds for a paced call too
    const poor = await line({ paced: true, keepUsage: () => {} }, POOR);
    expect(poor.status).toBe(429);
    expect((poor.body as { error: { code: string } }).error.code).toBe("insufficient_quota");
  });
});

describe("a batch line's place in a channel's gate", () => {
  it("is never aged above an interactive call, however long it waited", async () => {
    let now = 0;
    const gate = new ConnectionGate({ connections: 1, maxQueue: 10, queueTimeoutMs: 1e9, agingMs: 10, now: () => now });
    const holder = await gate.acquire(undefined, { priority: 0 });
    const order: string[] = [];
    const batch = gate.acquire(undefined, { priority: -1000, app: "b" }).then((r) => (order.push("batch"), r));
    now = 1e9; // a hundred million agings
    const interactive = gate.acquire(undefined, { priority: 0, app: "i" }).then((r) => (order.push("interactive"), r));
    holder();
    (await interactive)();
    (await batch)();
    expect(order).toEqual(["interactive", "batch"]);
  });

  it("never gives a batch line one of the reserved slots, queued or not", async () => {
    const gate = new ConnectionGate({ connections: 4, maxQueue: 10, queueTimeoutMs: 1e9 });
    gate.reserveLow(1);
    const low: Release[] = [];
    for (let i = 0; i < 3; i++) low.push(await gate.acquire(undefined, { priority: -1 }));
    let fourth: Release | undefined;
    const queued = gate.acquire(undefined, { priority: -1 }).then((r) => (fourth = r));
    expect(gate.view()).toMatchObject({ active: 3, lowActive: 3, queued: 1, interactiveQueued: 0 });
    // the interactive arrival finds the reserved slot at once
    const interactive = await gate.acquire(undefined, { priority: 0 });
    expect(gate.view()).toMatchObject({ active: 4, lowActive: 3 });
    interactive();
    await Promise.resolve();
    // the freed slot is the reserve's: the queued line still waits
    expect(fourth).toBeUndefined();
    expect(gate.view()).toMatchObject({ active: 3, queued: 1 });
    low[0]!();
    await queued;
    expect(gate.view()).toMatchObject({ active: 3, lowActive: 3, queued: 0 });
    for (const r of [...low.slice(1), fourth!]) r();
    expect(gate.view()).toMatchObject({ active: 0, lowActive: 0 });
  });

  it("preempts the newest batch line for each interactive call that would wait, no more", async () => {
    const gate = new ConnectionGate({ connections: 3, maxQueue: 10, queueTimeoutMs: 1e9 });
    const stopped: number[] = [];
    const lines: Release[] = [];
    // each line lets go of its slot when told to stop, as the runner's abort does
    for (let i = 0; i < 2; i++) {
      const release: Release = await gate.acquire(undefined, { priority: -1, preempt: () => (stopped.push(i), queueMicrotask(release)) });
      lines.push(release);
    }
    const first = await gate.acquire(undefined, { priority: 0 }); // the third slot: no preemption
    expect(stopped).toEqual([]);
    const second = gate.acquire(undefined, { priority: 0 });
    const third = gate.acquire(undefined, { priority: 5 });
    expect(stopped).toEqual([1, 0]); // newest first, one per waiting call
    await Promise.all([second, third]);
    expect(gate.view()).toMatchObject({ active: 3, lowActive: 0, queued: 0 });
    // a line that ended by itself is never told to stop later
    const fourth = gate.acquire(undefined, { priority: 0 });
    first();
    (await fourth)();
    expect(stopped).toEqual([1, 0]);
  });

  it("counts slots batch lines hold as room for an interactive call, and in no other case", async () => {
    const gate = new ConnectionGate({ connections: 2, maxQueue: 10, queueTimeoutMs: 1e9 });
    const line: Release = await gate.acquire(undefined, { priority: -1, preempt: () => queueMicrotask(line) });
    const interactive = await gate.acquire(undefined, { priority: 0 });
    // full, but the line gives its slot to the next interactive call: routing must not leave it
    expect(gate.view()).toMatchObject({ active: 2, lowActive: 1 });
    expect(gate.preemptible).toBe(1);
    expect(gate.hasRoom()).toBe(true);
    const next = gate.acquire(undefined, { priority: 0 });
    // the line was told to stop: its slot is the waiting call's, no room for another
    expect(gate.preemptible).toBe(0);
    expect(gate.hasRoom()).toBe(false);
    (await next)();
    expect(gate.hasRoom()).toBe(true);
    interactive();
    // a line without preempt (not a batch line) is no room
    const held: Release = await gate.acquire(undefined, { priority: -1 });
    const other = await gate.acquire(undefined, { priority: 0 });
    expect(gate.hasRoom()).toBe(false);
    held();
    other();
  });

  it("an interactive ticket is never preempted, and a line told to stop is not told twice", async () => {
    const gate = new ConnectionGate({ connections: 2, maxQueue: 10, queueTimeoutMs: 1e9 });
    let told = 0;
    const interactive = await gate.acquire(undefined, { priority: 0, preempt: () => told++ });
    const line = await gate.acquire(undefined, { priority: -1, preempt: () => told++ });
    const a = gate.acquire(undefined, { priority: 0 });
    const b = gate.acquire(undefined, { priority: 0 });
    expect(told).toBe(1); // the line, once; the interactive holder never
    line();
    (await a)();
    interactive();
    (await b)();
    expect(gate.view()).toMatchObject({ active: 0, queued: 0 });
  });
});

const row = (over: Partial<UsageRow> = {}): UsageRow => ({
  time: Date.now(), appId: "a", keyName: "k", shareId: null, model: "m", channel: "one", inputTokens: 3, outputTokens: 4, points: 7,
  status: 200, durationMs: 5, chatId: null, finishReason: "stop", cachedTokens: 0, batchId: "batch_9", customId: "c-1", ...over,
});

describe("a usage row's batch and line in the store", () => {
  it("SQLite: written with the row, NULL for any other call", async () => {
    const store = createStore({ driver: "sqlite", path: ":memory:" });
    await store.recordUsage(row(), ["app:a", "key:k"]);
    await store.recordUsage(row({ batchId: null, customId: null, requestId: "plain" }), ["app:a"]);
    const { rows } = await store.searchUsage({ from: 0, to: Date.now() + 1, limit: 10, offset: 0, order: { by: "id", desc: false } });
    expect(rows.map((r) => [r.batchId ?? null, r.customId ?? null])).toEqual([["batch_9", "c-1"], [null, null]]);
    await store.close();
  });

  const postgres = usePostgres();
  it("PostgreSQL: written with the row, NULL for any other call", async () => {
    const url = await postgres.createDatabase();
    const store = createStore({ driver: "postgres", url });
    await store.ping();
    await store.recordUsage(row({ batchId: null, customId: null, requestId: "plain" }), ["app:a"]);
    await store.recordUsage(row(), ["app:a", "key:k"]);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const rows = await client.query("SELECT batch_id, custom_id, request_id FROM usage ORDER BY id");
      expect(rows.rows).toEqual([{ batch_id: null, custom_id: null, request_id: "plain" }, { batch_id: "batch_9", custom_id: "c-1", request_id: null }]);
      const spend = await client.query("SELECT scope, points::float8 AS points FROM spend ORDER BY scope");
      expect(spend.rows).toEqual([{ scope: "app:a", points: 14 }, { scope: "key:k", points: 7 }]);
    } finally {
      await client.end();
      await store.close();
    }
  });
});
