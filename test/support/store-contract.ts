// The Store interface's contract: behaviour every implementation (memory, SQLite, PostgreSQL) must
// show, with the same values. describeStoreContract(name, open) runs it against one of them; a fresh,
// empty store per test.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AppendRoundInput, CreatedKeyRow, Store, UsageRow } from "../../src/store/types.js";

export const DAY = 24 * 60 * 60 * 1000;
export const T0 = Date.UTC(2025, 0, 1);
export const alice = { shareId: "public", uid: "alice" };

export function round(over: Partial<AppendRoundInput> & { user: string }): AppendRoundInput {
  return { appId: "support", chatId: "c1", owner: null, assistant: `re: ${over.user}`, at: T0, ...over };
}

export function usage(over: Partial<UsageRow>): UsageRow {
  return {
    time: T0, appId: "support", keyName: "web", shareId: null, model: "glm", channel: "local",
    inputTokens: 10, outputTokens: 5, points: 1, status: 200, durationMs: 30, chatId: null, ...over,
  };
}

export function createdKey(over: Partial<CreatedKeyRow> & { name: string }): CreatedKeyRow {
  return {
    kind: "app", appId: "support", sha256: `digest-of-${over.name}`, maxUsagePoints: -1, qpm: 0, createdAt: T0, revokedAt: null, ...over,
  };
}

const contents = (messages: Array<{ role: string; content: string }>) => messages.map((m) => `${m.role}:${m.content}`);

export function describeStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`the Store contract: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    describe("conversations", () => {
      it("keeps a three-round history in order, oldest first", async () => {
        for (const user of ["one", "two", "three"]) await store.appendRound(round({ user }));
        const messages = await store.loadMessages("support", "c1", 100);
        expect(contents(messages)).toEqual([
          "user:one", "assistant:re: one", "user:two", "assistant:re: two", "user:three", "assistant:re: three",
        ]);
        expect(messages[0]!.createdAt).toBe(T0);
      });

      it("loads only the last `limit` messages, still oldest first", async () => {
        for (const user of ["one", "two", "three"]) await store.appendRound(round({ user }));
        expect((await store.loadMessages("support", "c1", 3)).map((m) => m.content)).toEqual(["re: two", "three", "re: three"]);
        expect((await store.loadMessages("support", "c1", 2.9)).map((m) => m.content)).toEqual(["three", "re: three"]);
        expect(await store.loadMessages("support", "c1", 0)).toEqual([]);
        expect(await store.loadMessages("support", "c1", -1)).toEqual([]);
        expect(await store.loadMessages("support", "nope", 10)).toEqual([]);
      });

      it("reads a chat and its last messages at once as getChat and loadMessages read them", async () => {
        expect(await store.getChatWithMessages("support", "c1", 4)).toBeUndefined();
        for (const user of ["one", "two", "three"]) await store.appendRound(round({ user, variables: { n: user } }));
        for (const limit of [0, 1, 2, 3, 4, 6, 7, 100, 2.9, -1]) {
          const both = await store.getChatWithMessages("support", "c1", limit);
          expect(both).toEqual({ chat: await store.getChat("support", "c1"), messages: await store.loadMessages("support", "c1", limit) });
        }
        expect(await store.getChatWithMessages("other-app", "c1", 4)).toBeUndefined();
      });

      it("keeps chats apart, and the same chatId under two apps is two chats", async () => {
        await store.appendRound(round({ user: "in c1" }));
        await store.appendRound(round({ chatId: "c2", user: "in c2" }));
        await store.appendRound(round({ appId: "sales", user: "sales c1" }));
        const of = async (appId: string, chatId: string) => (await store.loadMessages(appId, chatId, 10)).map((m) => m.content);
        expect(await of("support", "c1")).toEqual(["in c1", "re: in c1"]);
        expect(await of("support", "c2")).toEqual(["in c2", "re: in c2"]);
        expect(await of("sales", "c1")).toEqual(["sales c1", "re: sales c1"]);
        expect((await store.getChat("sales", "c1"))?.title).toBe("sales c1");
      });

      it("titles a chat with its first user turn, whitespace collapsed, at most 60 characters", async () => {
        await store.appendRound(round({ user: `  hello \n\t world ${"x".repeat(100)}` }));
        await store.appendRound(round({ user: "a later question" }));
        const chat = await store.getChat("support", "c1");
        expect(chat?.title).toBe(`hello world ${"x".repeat(48)}`);
        expect(chat?.title).toHaveLength(60);
        await store.appendRound(round({ chatId: "emoji", user: "😀".repeat(70) }));
        expect((await store.getChat("support", "emoji"))?.title).toBe("😀".repeat(60));
      });

      it("returns the owner, title and updatedAt of a chat; undefined for none", async () => {
        await store.appendRound(round({ chatId: "s1", owner: alice, user: "hi", at: T0 }));
        await store.appendRound(round({ chatId: "s1", owner: alice, user: "again", at: T0 + 5 }));
        await store.appendRound(round({ chatId: "k1", user: "by key" }));
        expect(await store.getChat("support", "s1")).toEqual({ chatId: "s1", owner: alice, title: "hi", updatedAt: T0 + 5 });
        expect((await store.getChat("support", "k1"))?.owner).toBeNull();
        expect(await store.getChat("support", "missing")).toBeUndefined();
      });

      it("never moves updatedAt back, and keeps the first owner", async () => {
        await store.appendRound(round({ chatId: "s1", owner: alice, user: "late", at: T0 + 100 }));
        await store.appendRound(round({ chatId: "s1", owner: { shareId: "vip", uid: "bob" }, user: "early", at: T0 }));
        expect(await store.getChat("support", "s1")).toEqual({ chatId: "s1", owner: alice, title: "late", updatedAt: T0 + 100 });
        expect((await store.loadMessages("support", "s1", 4)).map((m) => m.createdAt)).toEqual([T0 + 100, T0 + 100, T0, T0]);
      });

      it("loses no turn when 50 rounds are appended to one chat at once", async () => {
        const users = Array.from({ length: 50 }, (_, i) => `q${i}`);
        await Promise.all(users.map((user) => store.appendRound(round({ user }))));
        const messages = await store.loadMessages("support", "c1", 1000);
        expect(messages).toHaveLength(100);
        // each round stays whole: its answer follows its question
        for (let i = 0; i < 100; i += 2) expect(messages[i + 1]!.content).toBe(`re: ${messages[i]!.content}`);
        expect(new Set(messages.filter((m) => m.role === "user").map((m) => m.content))).toEqual(new Set(users));
      });

      it("keeps a chat's variables as given (key order too), replaced only by a round that gives them", async () => {
        await store.appendRound(round({ user: "no vars" }));
        expect(await store.getChat("support", "c1")).not.toHaveProperty("variables");
        await store.appendRound(round({ user: "vars", variables: { zeta: "z", alpha: 1, nested: { b: [1, "x"], a: null } } }));
        await store.appendRound(round({ user: "keeps them" }));
        const kept = (await store.getChat("support", "c1"))?.variables;
        expect(kept).toEqual({ zeta: "z", alpha: 1, nested: { b: [1, "x"], a: null } });
        expect(Object.keys(kept!)).toEqual(["zeta", "alpha", "nested"]);
        await store.appendRound(round({ user: "replaces", variables: { only: true } }));
        expect((await store.getChat("support", "c1"))?.variables).toEqual({ only: true });
        await store.appendRound(round({ chatId: "fresh", user: "first", variables: {} }));
        expect((await store.getChat("support", "fresh"))?.variables).toEqual({});
      });

      it("reads back every text as written: NUL, U+FFFF, emoji, and lone surrogates as SQLite keeps them", async () => {
        const odd = "a\u0000b\uffffc\uffff0d😀e";
        await store.appendRound(round({ chatId: odd, owner: { shareId: "public", uid: odd }, user: odd, assistant: `${odd}\u0000`, variables: { [odd]: odd } }));
        expect(await store.loadMessages("support", odd, 2)).toEqual([
          { role: "user", content: odd, createdAt: T0 },
          { role: "assistant", content: `${odd}\u0000`, createdAt: T0 },
        ]);
        expect(await store.getChat("support", odd)).toEqual({ chatId: odd, owner: { shareId: "public", uid: odd }, title: odd, updatedAt: T0, variables: { [odd]: odd } });
        expect(await store.listChats({ shareId: "public", uid: odd }, { since: 0, limit: 5 })).toEqual([{ chatId: odd, title: odd, updatedAt: T0 }]);
        await store.appendRound(round({ chatId: "lone", user: "x\ud800y\udc00z", assistant: "ok" }));
        expect((await store.loadMessages("support", "lone", 2))[0]!.content).toBe("x\ufffd\ufffd\ufffdy\ufffd\ufffd\ufffdz");
      });
    });

    describe("history after rounds were added", () => {
      it("sees every committed round after the history was read once, also past 64 messages", async () => {
        expect(await store.getChat("support", "long")).toBeUndefined();
        expect(await store.loadMessages("support", "long", 12)).toEqual([]);
        for (let i = 0; i < 40; i++) await store.appendRound(round({ chatId: "long", user: `u${i}`, assistant: `a${i}`, at: T0 + i }));
        expect((await store.getChat("support", "long"))?.updatedAt).toBe(T0 + 39);
        const last12 = await store.loadMessages("support", "long", 12);
        expect(last12.map((m) => m.content)).toEqual(Array.from({ length: 6 }, (_, i) => [`u${34 + i}`, `a${34 + i}`]).flat());
        const all = await store.loadMessages("support", "long", 200);
        expect(all).toHaveLength(80);
        expect(all[0]!.content).toBe("u0");
      });

      it("reads the same history in short and long reads after concurrent rounds", async () => {
        await store.loadMessages("support", "busy", 12);
        await Promise.all(Array.from({ length: 30 }, (_, i) => store.appendRound(round({ chatId: "busy", user: `q${i}`, assistant: `r${i}`, at: T0 }))));
        const short = await store.loadMessages("support", "busy", 60);
        const long = await store.loadMessages("support", "busy", 200);
        expect(short).toHaveLength(60);
        expect(short).toEqual(long);
        for (let i = 0; i < 60; i += 2) expect(short[i + 1]!.content).toBe(short[i]!.content.replace("q", "r"));
      });
    });

    describe("share-link chat lists", () => {
      it("lists at most 20 chats updated since the cut-off, newest first, for that user only", async () => {
        const now = T0 + 60 * DAY;
        for (let i = 0; i < 25; i++) await store.appendRound(round({ chatId: `new${i}`, owner: alice, user: `q${i}`, at: now - i * 1000 }));
        await store.appendRound(round({ chatId: "old", owner: alice, user: "old", at: now - 31 * DAY }));
        await store.appendRound(round({ chatId: "bob", owner: { shareId: "public", uid: "bob" }, user: "b", at: now }));
        await store.appendRound(round({ chatId: "other-link", owner: { shareId: "vip", uid: "alice" }, user: "v", at: now }));
        await store.appendRound(round({ chatId: "by-key", user: "k", at: now }));

        const chats = await store.listChats(alice, { since: now - 30 * DAY, limit: 20 });
        expect(chats.map((c) => c.chatId)).toEqual(Array.from({ length: 20 }, (_, i) => `new${i}`));
        expect(chats[0]).toEqual({ chatId: "new0", title: "q0", updatedAt: now });
        const all = await store.listChats(alice, { since: now - 30 * DAY, limit: 100 });
        expect(all).toHaveLength(25);
        expect(all.map((c) => c.chatId)).not.toContain("old");
        expect(await store.listChats(alice, { since: now - 30 * DAY, limit: 0 })).toEqual([]);
        // the cut-off is inclusive, also when it is not a whole millisecond
        expect((await store.listChats(alice, { since: now - 24_000 + 0.5, limit: 100 })).map((c) => c.chatId)).toEqual(
          Array.from({ length: 24 }, (_, i) => `new${i}`),
        );
      });

      it("moves a chat to the top when a round is added; equal times list the newer chat first", async () => {
        await store.appendRound(round({ chatId: "a", owner: alice, user: "a", at: T0 }));
        await store.appendRound(round({ chatId: "b", owner: alice, user: "b", at: T0 + 1 }));
        await store.appendRound(round({ chatId: "a", owner: alice, user: "a2", at: T0 + 2 }));
        expect((await store.listChats(alice, { since: 0, limit: 20 })).map((c) => c.chatId)).toEqual(["a", "b"]);
        await store.appendRound(round({ chatId: "c", owner: alice, user: "c", at: T0 + 2 }));
        await store.appendRound(round({ chatId: "d", owner: alice, user: "d", at: T0 + 2 }));
        expect((await store.listChats(alice, { since: 0, limit: 20 })).map((c) => c.chatId)).toEqual(["d", "c", "a", "b"]);
      });
    });

    describe("usage and spend", () => {
      it("summarises usage overall, per app and per model, filtered by from, to and appId", async () => {
        await store.recordUsage(usage({ time: T0, inputTokens: 10, outputTokens: 5, points: 1.5 }), []);
        await store.recordUsage(usage({ time: T0 + 10, model: "qwen", inputTokens: 20, outputTokens: 2, points: 2 }), []);
        await store.recordUsage(usage({ time: T0 + 20, appId: "sales", inputTokens: 1, outputTokens: 1, points: 0.5 }), []);

        const all = await store.summarizeUsage({});
        expect(all.totals).toEqual({ requests: 3, inputTokens: 31, outputTokens: 8, points: 4 });
        expect(all.apps).toEqual([
          { appId: "sales", requests: 1, inputTokens: 1, outputTokens: 1, points: 0.5 },
          { appId: "support", requests: 2, inputTokens: 30, outputTokens: 7, points: 3.5 },
        ]);
        expect(all.models).toEqual([
          { model: "glm", requests: 2, inputTokens: 11, outputTokens: 6, points: 2 },
          { model: "qwen", requests: 1, inputTokens: 20, outputTokens: 2, points: 2 },
        ]);
        // from is inclusive, to exclusive, also between whole milliseconds
        expect((await store.summarizeUsage({ from: T0 + 10, to: T0 + 20 })).totals).toEqual({ requests: 1, inputTokens: 20, outputTokens: 2, points: 2 });
        expect((await store.summarizeUsage({ from: T0 + 9.5, to: T0 + 20.5 })).totals.requests).toBe(2);
        const sales = await store.summarizeUsage({ appId: "sales" });
        expect(sales.totals.requests).toBe(1);
        expect(sales.apps.map((a) => a.appId)).toEqual(["sales"]);
        expect(await store.summarizeUsage({ from: T0 + 1000 })).toEqual({
          totals: { requests: 0, inputTokens: 0, outputTokens: 0, points: 0 }, apps: [], models: [],
        });
      });

      it("sums points as SQLite does (compensated: ten 0.1 make 1) and orders names by their bytes", async () => {
        for (const appId of ["beta", "Zeta", "alpha", "\ufffd", "😀", "é"]) {
          for (let i = 0; i < 10; i++) await store.recordUsage(usage({ appId, points: 0.1 }), []);
        }
        await store.recordUsage(usage({ appId: "thirds", points: 1 / 3 }), []);
        await store.recordUsage(usage({ appId: "thirds", points: 0.06 * 3 }), []);
        const summary = await store.summarizeUsage({});
        expect(summary.apps.map((a) => [a.appId, a.points])).toEqual([
          ["Zeta", 1], ["alpha", 1], ["beta", 1], ["thirds", 1 / 3 + 0.06 * 3], ["é", 1], ["\ufffd", 1], ["😀", 1],
        ]);
        // not the running sum of these doubles (6.513333333333333): within an ulp of the exact sum
        expect(summary.totals.points).toBe(6.513333333333334);
      });

      it("adds each usage row's points to every named spend scope once, as a running sum", async () => {
        expect(await store.getSpent("app:support")).toBe(0);
        await store.recordUsage(usage({ points: 2 }), ["app:support", "key:web"]);
        await store.recordUsage(usage({ points: 3 }), ["app:support", "app:support"]);
        await store.recordUsage(usage({ points: 0 }), ["app:free"]);
        expect(await store.getSpent("app:support")).toBe(5);
        expect(await store.getSpent("key:web")).toBe(2);
        expect(await store.getSpent("share:public")).toBe(0);
        expect(await store.getSpent("app:free")).toBe(0);
        // a running sum of doubles, like a counter in process memory would be
        for (let i = 0; i < 10; i++) await store.recordUsage(usage({ points: 0.1 }), ["app:tenths"]);
        expect(await store.getSpent("app:tenths")).toBe(0.9999999999999999);
      });

      it("loses no spend when 40 rows are recorded at once", async () => {
        await Promise.all(Array.from({ length: 40 }, () => store.recordUsage(usage({ points: 0.5 }), ["app:support", "key:web"])));
        expect(await store.getSpent("app:support")).toBe(20);
        expect((await store.summarizeUsage({})).totals).toEqual({ requests: 40, inputTokens: 400, outputTokens: 200, points: 20 });
      });
    });

    describe("created keys and key use", () => {
      it("adds keys, refuses a name already taken (revoked too), and lists them oldest first", async () => {
        expect(await store.listCreatedKeys()).toEqual([]);
        expect(await store.createKey(createdKey({ name: "b-second", createdAt: T0 + 1 }))).toBe(true);
        expect(await store.createKey(createdKey({ name: "a-first", kind: "global", appId: null, maxUsagePoints: 12.5, qpm: 60 }))).toBe(true);
        expect(await store.createKey(createdKey({ name: "B-same-time", createdAt: T0 + 1 }))).toBe(true);
        expect(await store.createKey(createdKey({ name: "a-first", sha256: "other" }))).toBe(false);
        await store.revokeKey("b-second", T0 + 5);
        expect(await store.createKey(createdKey({ name: "b-second", sha256: "again" }))).toBe(false);
        expect(await store.listCreatedKeys()).toEqual([
          createdKey({ name: "a-first", kind: "global", appId: null, maxUsagePoints: 12.5, qpm: 60 }),
          createdKey({ name: "B-same-time", createdAt: T0 + 1 }),
          createdKey({ name: "b-second", createdAt: T0 + 1, revokedAt: T0 + 5 }),
        ]);
      });

      it("revokes once: a second revoke keeps the first time; an unknown name is undefined", async () => {
        await store.createKey(createdKey({ name: "k" }));
        expect(await store.revokeKey("k", T0 + 10)).toEqual(createdKey({ name: "k", revokedAt: T0 + 10 }));
        expect(await store.revokeKey("k", T0 + 20)).toEqual(createdKey({ name: "k", revokedAt: T0 + 10 }));
        expect(await store.revokeKey("nobody", T0)).toBeUndefined();
      });

      it("moves lastUsedAt forward only, and a new key starts with no use under its name", async () => {
        expect(await store.listKeyUse()).toEqual([]);
        await store.recordKeyUse([]);
        await store.recordKeyUse([{ name: "cfg", lastUsedAt: T0 + 10 }, { name: "k", lastUsedAt: T0 }, { name: "k", lastUsedAt: T0 + 3 }]);
        await store.recordKeyUse([{ name: "cfg", lastUsedAt: T0 + 5 }, { name: "k", lastUsedAt: T0 + 1 }]);
        const byName = async () => (await store.listKeyUse()).sort((a, b) => (a.name < b.name ? -1 : 1));
        expect(await byName()).toEqual([{ name: "cfg", lastUsedAt: T0 + 10 }, { name: "k", lastUsedAt: T0 + 3 }]);
        await store.createKey(createdKey({ name: "k" }));
        expect(await byName()).toEqual([{ name: "cfg", lastUsedAt: T0 + 10 }]);
      });
    });

    it("answers a ping", async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
