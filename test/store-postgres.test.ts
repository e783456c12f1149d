// What the postgres store adds to the contract (test/store-contract.test.ts): instances that start at
// once and share one database, and a database that goes away or freezes — 503 store_unavailable and
// /readyz 503 meanwhile, nothing half-written, back on its own.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PG_MIGRATIONS } from "../src/store/postgres-migrations.js";
import { createStore, openStore } from "../src/store/index.js";
import { createPostgresStore } from "../src/store/postgres.js";
import type { Store } from "../src/store/types.js";
import { GLOBAL_KEY, chatOk, expectError, gatewayConfig, postChat, user } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { usePostgres } from "./support/postgres.js";
import { T0, alice, chatOf, createdKey, history, round, usage } from "./support/store-contract.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const postgres = usePostgres();
let upstream: Upstream;
beforeAll(async () => {
  upstream = await startUpstream({ text: "pg answer" });
});
afterAll(() => upstream.close());

async function sql<R>(url: string, text: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows as R[];
  } finally {
    await client.end();
  }
}

/** Waits until every other connection to the database has ended (polled: nothing to await). */
async function untilNoConnections(url: string): Promise<void> {
  const others = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
  while ((await sql<{ n: number }>(url, others))[0]!.n > 0) await new Promise((resolve) => setTimeout(resolve, 20));
}

async function withStores<T>(url: string, count: number, use: (stores: Store[]) => Promise<T>): Promise<T> {
  const stores = Array.from({ length: count }, () => createStore({ driver: "postgres", url }));
  try {
    return await use(stores);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
}

const pgConfig = (url: string) => gatewayConfig(upstream.url, { extra: { store: { driver: "postgres", url } } });
const historyOf = () => upstream.last().body.messages.map((m) => m.content);

describe("several instances on one PostgreSQL database", () => {
  it("migrates once when four instances start at once, and refuses a schema newer than this build", async () => {
    const url = await postgres.createDatabase();
    await withStores(url, 4, (stores) => Promise.all(stores.map((s) => s.ping())));
    expect(await sql(url, "SELECT version FROM sluice_schema")).toEqual([{ version: PG_MIGRATIONS.length }]);

    await sql(url, "UPDATE sluice_schema SET version = 99");
    await expect(openStore({ driver: "postgres", url })).rejects.toThrow(`the database has schema version 99; this build knows up to ${PG_MIGRATIONS.length}`);
  });

  it("shares chats, share lists, spend, usage and keys between instances: no stale history", async () => {
    await withStores(await postgres.createDatabase(), 2, async ([a, b]) => {
      await a!.appendRound(round({ owner: alice, user: "one", at: T0 }));
      expect((await history(b!, "support", "c1", 10)).map((m) => m.content)).toEqual(["one", "re: one"]);
      await b!.appendRound(round({ owner: alice, user: "two", at: T0 + 1, variables: { lang: "en" } }));
      expect((await history(a!, "support", "c1", 10)).map((m) => m.content)).toEqual(["one", "re: one", "two", "re: two"]);
      expect(await chatOf(a!, "support", "c1")).toEqual({ chatId: "c1", owner: alice, title: "one", updatedAt: T0 + 1, variables: { lang: "en" } });
      expect(await a!.listChats(alice, { since: 0, limit: 20 })).toEqual([{ chatId: "c1", title: "one", updatedAt: T0 + 1 }]);

      await Promise.all([a!, b!, a!, b!].map((s) => s.recordUsage(usage({ points: 1.5 }), ["app:support"])));
      expect(await b!.getSpent("app:support")).toBe(6);
      expect((await a!.summarizeUsage({})).totals.requests).toBe(4);

      expect(await a!.createKey(createdKey({ name: "ops" }))).toBe(true);
      expect(await b!.createKey(createdKey({ name: "ops", sha256: "other" }))).toBe(false);
      await b!.revokeKey("ops", T0 + 9);
      expect((await a!.listCreatedKeys()).map((k) => k.revokedAt)).toEqual([T0 + 9]);
    });
  });

  it("continues a conversation across two gateways on the same database", async () => {
    const url = await postgres.createDatabase();
    const gateways = [await startGateway(pgConfig(url)), await startGateway(pgConfig(url))];
    try {
      const [first, second] = gateways as [StartedGateway, StartedGateway];
      await chatOk(first.url, { chatId: "shared", messages: [user("on the first")] });
      await chatOk(second.url, { chatId: "shared", messages: [user("on the second")] });
      expect(historyOf()).toEqual(["on the first", "pg answer", "on the second"]);
      await chatOk(first.url, { chatId: "shared", messages: [user("back on the first")] });
      // the first instance sees the round the second one added (app a1 keeps 2 rounds)
      expect(historyOf()).toEqual(["on the first", "pg answer", "on the second", "pg answer", "back on the first"]);
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
    }
  });
});

describe("group commit: concurrent writes share transactions", () => {
  it("lands 200 concurrent usage writes on one scope with the exact spend sum, and concurrent rounds of one chat in order", async () => {
    await withStores(await postgres.createDatabase(), 1, async ([store]) => {
      // quarter points add up exactly in any grouping
      const points = (i: number) => 0.25 * (1 + (i % 7));
      const scopes = (i: number) => ["app:support", i % 2 ? "key:web" : "app:support"];
      const rounds = Array.from({ length: 30 }, (_, i) => store!.appendRound(round({ chatId: "busy", user: `u${i}`, at: T0 + i })));
      await Promise.all([...rounds, ...Array.from({ length: 200 }, (_, i) => store!.recordUsage(usage({ points: points(i), inputTokens: i }), scopes(i)))]);

      const sum = (keep: (i: number) => boolean) => Array.from({ length: 200 }, (_, i) => (keep(i) ? points(i) : 0)).reduce((a, b) => a + b);
      expect(await store!.getSpent("app:support")).toBe(sum(() => true));
      expect(await store!.getSpent("key:web")).toBe(sum((i) => i % 2 === 1));
      expect((await store!.summarizeUsage({})).totals).toEqual({ requests: 200, inputTokens: 199 * 100, outputTokens: 1000, points: sum(() => true) });
      const users = (await history(store!, "support", "busy", 100)).filter((m) => m.role === "user").map((m) => m.content);
      expect(users).toEqual(Array.from({ length: 30 }, (_, i) => `u${i}`));
    });
  });

  it("keeps each usage row's cached tokens", async () => {
    const url = await postgres.createDatabase();
    await withStores(url, 1, async ([store]) => {
      await Promise.all([store!.recordUsage(usage({ inputTokens: 100, cachedTokens: 64 }), []), store!.recordUsage(usage({ inputTokens: 7 }), [])]);
    });
    expect(await sql(url, "SELECT input_tokens::int, cached_tokens::int FROM usage ORDER BY input_tokens")).toEqual([
      { input_tokens: 7, cached_tokens: 0 },
      { input_tokens: 100, cached_tokens: 64 },
    ]);
  });

  it("fails only the caller of a row the database refuses; the rest of its batch is written", async () => {
    await withStores(await postgres.createDatabase(), 1, async ([store]) => {
      const writes: Array<Promise<unknown>> = Array.from({ length: 20 }, (_, i) => store!.recordUsage(usage({ points: 2, inputTokens: i === 7 ? Number.NaN : 1 }), ["app:support"]));
      writes.push(store!.appendRound(round({ chatId: "beside", user: "kept" })));
      const outcomes = await Promise.allSettled(writes);
      expect(outcomes.map((o) => o.status)).toEqual(writes.map((_, i) => (i === 7 ? "rejected" : "fulfilled")));
      expect(await store!.getSpent("app:support")).toBe(38);
      expect((await store!.summarizeUsage({})).totals.requests).toBe(19);
      expect((await history(store!, "support", "beside", 2)).map((m) => m.content)).toEqual(["kept", "re: kept"]);
    });
  });
});

describe("a chat and its history in one read", () => {
  it("answers each of many reads made at once as it would alone: owned, not owned, missing, any limit and bound", async () => {
    const store = createPostgresStore(await postgres.createDatabase());
    try {
      const owners = [alice, { keyName: "web" }];
      for (let chat = 0; chat < 6; chat++) {
        const owner = owners[chat % 2]!;
        await Promise.all(Array.from({ length: chat + 1 }, (_, i) => store.appendRound(round({ chatId: `c${chat}`, owner, user: `c${chat} u${i}`, at: T0 + i }))));
      }
      const whos = [null, alice, { keyName: "web" }, { shareId: "public", uid: "bob" }];
      const reads = Array.from({ length: 60 }, (_, i) => ({ chatId: `c${i % 8}`, who: whos[i % 4]!, opts: { limit: i % 5, maxBytes: [Number.POSITIVE_INFINITY, 12, 0][i % 3]!, create: false } }));
      const answers = await Promise.all(reads.map((r) => store.openChat("support", r.chatId, r.who, r.opts)));
      for (const [i, r] of reads.entries()) expect(answers[i]).toEqual(await store.openChat("support", r.chatId, r.who, r.opts));
      expect(answers.filter((a) => a.status === "missing")).toHaveLength(14);
      expect(answers.filter((a) => a.status === "not_owned").length).toBeGreaterThan(10);
    } finally {
      await store.close();
    }
  });
});

describe("PostgreSQL going away", () => {
  it("answers /readyz 503 and chat 503 store_unavailable while it is down, writes nothing half, and recovers on its own", { timeout: 60_000 }, async () => {
    const url = await postgres.createDatabase();
    const gw = await startGateway(pgConfig(url));
    try {
      await chatOk(gw.url, { chatId: "c1", messages: [user("before")] });
      expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);

      // 1. Down: every path that needs the store says so, at once.
      await postgres.server().stop();
      expect((await fetch(`${gw.url}/readyz`)).status).toBe(503);
      const withChat = await expectError(await postChat(gw.url, { chatId: "c1", messages: [user("while down")] }), 503, "store_unavailable");
      expect(withChat.type).toBe("api_error");
      // no chat to read: the answer comes, but is not acknowledged without its usage row
      await expectError(await postChat(gw.url, { messages: [user("stateless while down")] }), 503, "store_unavailable");
      await expectError(await postChat(gw.url, { chatId: "c1", stream: true, messages: [user("streamed while down")] }), 503, "store_unavailable");
      await expectError(await fetch(`${gw.url}/api/v1/usage`, { headers: { authorization: `Bearer ${GLOBAL_KEY}` } }), 503, "store_unavailable");

      // 2. Back: the same gateway serves again without a restart, and nothing from the outage is stored.
      await postgres.server().start();
      expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
      await chatOk(gw.url, { chatId: "c1", messages: [user("after")] });
      expect(historyOf()).toEqual(["before", "pg answer", "after"]);
      expect((await gw.store.summarizeUsage({})).totals.requests).toBe(2);
    } finally {
      await postgres.server().start().catch(() => {}); // running already unless the test failed while it was down
      await gw.close();
    }
  });

  it("never hangs on a frozen server: 503 once the timeouts pass, nothing given up on is committed later", { timeout: 60_000 }, async () => {
    const url = await postgres.createDatabase();
    const gw = await startGateway(pgConfig(url));
    let closed = false;
    try {
      await chatOk(gw.url, { chatId: "c1", messages: [user("before")] });
      // idle pooled connections, so that writes reach the frozen server and wait there
      await Promise.all(Array.from({ length: 4 }, () => chatOf(gw.store, "a1", "warm")));
      postgres.server().pause();
      try {
        const unavailable = { status: 503, code: "store_unavailable" };
        await expect(gw.store.appendRound(round({ appId: "a1", chatId: "c1", user: "given up" }))).rejects.toMatchObject(unavailable);
        await expect(gw.store.recordUsage(usage({ appId: "a1" }), ["app:given-up"])).rejects.toMatchObject(unavailable);
        expect((await fetch(`${gw.url}/readyz`)).status).toBe(503);
        // pooled connections whose server stopped answering, and new connections that never start
        const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => postChat(gw.url, { chatId: `frozen-${i}`, messages: [user("frozen")] })));
        for (const res of answers) await expectError(res, 503, "store_unavailable");
      } finally {
        postgres.server().resume();
      }
      await chatOk(gw.url, { chatId: "c1", messages: [user("after")] });
      expect(historyOf()).toEqual(["before", "pg answer", "after"]);
      expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);

      // the frozen connections' statements ran when the server woke up: none of them committed
      await gw.close();
      closed = true;
      await untilNoConnections(url);
      await withStores(url, 1, async ([store]) => {
        expect((await history(store!, "a1", "c1", 10)).map((m) => m.content)).toEqual(["before", "pg answer", "after", "pg answer"]);
        expect((await store!.summarizeUsage({})).totals.requests).toBe(2);
        expect(await store!.getSpent("app:given-up")).toBe(0);
      });
    } finally {
      if (!closed) await gw.close();
    }
  });
});
