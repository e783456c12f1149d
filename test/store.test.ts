import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { createStore } from "../src/store/index.js";
import { MIGRATIONS } from "../src/store/migrations.js";
import { createSqliteStore } from "../src/store/sqlite.js";
import type { AppendRoundInput, Store, UsageRow } from "../src/store/types.js";

const DAY = 24 * 60 * 60 * 1000;
const T0 = Date.UTC(2025, 0, 1);
const alice = { shareId: "public", uid: "alice" };

function round(over: Partial<AppendRoundInput> & { user: string }): AppendRoundInput {
  return { appId: "support", chatId: "c1", owner: null, assistant: `re: ${over.user}`, at: T0, ...over };
}

function usage(over: Partial<UsageRow>): UsageRow {
  return {
    time: T0, appId: "support", keyName: "web", shareId: null, model: "glm", channel: "local",
    inputTokens: 10, outputTokens: 5, points: 1, status: 200, durationMs: 30, chatId: null, ...over,
  };
}

let store: Store;
beforeEach(() => {
  store = createSqliteStore(":memory:");
});
afterEach(async () => {
  await store.close();
});

describe("conversations", () => {
  it("keeps a three-round history in order, oldest first", async () => {
    for (const user of ["one", "two", "three"]) await store.appendRound(round({ user }));
    const messages = await store.loadMessages("support", "c1", 100);
    expect(messages.map((m) => `${m.role}:${m.content}`)).toEqual([
      "user:one", "assistant:re: one", "user:two", "assistant:re: two", "user:three", "assistant:re: three",
    ]);
    expect(messages[0]!.createdAt).toBe(T0);
  });

  it("loads only the last `limit` messages, still oldest first", async () => {
    for (const user of ["one", "two", "three"]) await store.appendRound(round({ user }));
    const last = await store.loadMessages("support", "c1", 3);
    expect(last.map((m) => m.content)).toEqual(["re: two", "three", "re: three"]);
    expect(await store.loadMessages("support", "c1", 0)).toEqual([]);
    expect(await store.loadMessages("support", "nope", 10)).toEqual([]);
  });

  it("keeps chats apart, and the same chatId under two apps is two chats", async () => {
    await store.appendRound(round({ user: "in c1" }));
    await store.appendRound(round({ chatId: "c2", user: "in c2" }));
    await store.appendRound(round({ appId: "sales", user: "sales c1" }));
    const content = async (appId: string, chatId: string) =>
      (await store.loadMessages(appId, chatId, 10)).map((m) => m.content);
    expect(await content("support", "c1")).toEqual(["in c1", "re: in c1"]);
    expect(await content("support", "c2")).toEqual(["in c2", "re: in c2"]);
    expect(await content("sales", "c1")).toEqual(["sales c1", "re: sales c1"]);
    expect((await store.getChat("sales", "c1"))?.title).toBe("sales c1");
  });

  it("titles a chat with its first user turn, whitespace collapsed, at most 60 characters", async () => {
    await store.appendRound(round({ user: `  hello \n\t world ${"x".repeat(100)}` }));
    await store.appendRound(round({ user: "a later question" }));
    const chat = await store.getChat("support", "c1");
    expect(chat?.title).toBe(`hello world ${"x".repeat(48)}`);
    expect(chat?.title).toHaveLength(60);
  });

  it("returns the owner, title and updatedAt of a chat; undefined for none", async () => {
    await store.appendRound(round({ chatId: "s1", owner: alice, user: "hi", at: T0 }));
    await store.appendRound(round({ chatId: "s1", owner: alice, user: "again", at: T0 + 5 }));
    await store.appendRound(round({ chatId: "k1", user: "by key" }));
    expect(await store.getChat("support", "s1")).toEqual({ chatId: "s1", owner: alice, title: "hi", updatedAt: T0 + 5 });
    expect((await store.getChat("support", "k1"))?.owner).toBeNull();
    expect(await store.getChat("support", "missing")).toBeUndefined();
  });

  it("loses no turn when 50 rounds are appended to one chat at once", async () => {
    const users = Array.from({ length: 50 }, (_, i) => `q${i}`);
    await Promise.all(users.map((user) => store.appendRound(round({ user }))));
    const messages = await store.loadMessages("support", "c1", 1000);
    expect(messages).toHaveLength(100);
    for (let i = 0; i < 100; i += 2) {
      // each round stays whole: its answer follows its question
      expect(messages[i + 1]!.content).toBe(`re: ${messages[i]!.content}`);
    }
    expect(new Set(messages.filter((m) => m.role === "user").map((m) => m.content))).toEqual(new Set(users));
  });
});

describe("history cache", () => {
  it("sees every committed round after the history was read once, also past the cached 64 messages", async () => {
    expect(await store.getChat("support", "long")).toBeUndefined(); // caches "no such chat"
    expect(await store.loadMessages("support", "long", 12)).toEqual([]);
    for (let i = 0; i < 40; i++) await store.appendRound(round({ chatId: "long", user: `u${i}`, assistant: `a${i}`, at: T0 + i }));
    expect((await store.getChat("support", "long"))?.updatedAt).toBe(T0 + 39);
    const last12 = await store.loadMessages("support", "long", 12);
    expect(last12.map((m) => m.content)).toEqual(Array.from({ length: 6 }, (_, i) => [`u${34 + i}`, `a${34 + i}`]).flat());
    const all = await store.loadMessages("support", "long", 200);
    expect(all).toHaveLength(80);
    expect(all[0]!.content).toBe("u0");
  });

  it("agrees with a fresh read of the database after concurrent rounds", async () => {
    await store.loadMessages("support", "busy", 12);
    await Promise.all(Array.from({ length: 30 }, (_, i) => store.appendRound(round({ chatId: "busy", user: `q${i}`, assistant: `r${i}`, at: T0 }))));
    const cached = await store.loadMessages("support", "busy", 60);
    const fromDisk = await store.loadMessages("support", "busy", 200); // past the cache: read from SQLite
    expect(cached).toHaveLength(60);
    expect(cached).toEqual(fromDisk);
    for (let i = 0; i < 60; i += 2) expect(cached[i + 1]!.content).toBe(cached[i]!.content.replace("q", "r"));
  });
});

describe("share-link chat lists", () => {
  it("lists at most 20 chats updated since the cut-off, newest first, for that user only", async () => {
    const now = T0 + 60 * DAY;
    for (let i = 0; i < 25; i++) {
      await store.appendRound(round({ chatId: `new${i}`, owner: alice, user: `q${i}`, at: now - i * 1000 }));
    }
    await store.appendRound(round({ chatId: "old", owner: alice, user: "old", at: now - 31 * DAY }));
    await store.appendRound(round({ chatId: "bob", owner: { shareId: "public", uid: "bob" }, user: "b", at: now }));
    await store.appendRound(round({ chatId: "other-link", owner: { shareId: "vip", uid: "alice" }, user: "v", at: now }));

    const chats = await store.listChats(alice, { since: now - 30 * DAY, limit: 20 });
    expect(chats).toHaveLength(20);
    expect(chats.map((c) => c.chatId)).toEqual(Array.from({ length: 20 }, (_, i) => `new${i}`));
    expect(chats[0]).toEqual({ chatId: "new0", title: "q0", updatedAt: now });

    const all = await store.listChats(alice, { since: now - 30 * DAY, limit: 100 });
    expect(all.map((c) => c.chatId)).not.toContain("old");
    expect(all).toHaveLength(25);
  });

  it("moves a chat to the top when a round is added to it", async () => {
    await store.appendRound(round({ chatId: "a", owner: alice, user: "a", at: T0 }));
    await store.appendRound(round({ chatId: "b", owner: alice, user: "b", at: T0 + 1 }));
    await store.appendRound(round({ chatId: "a", owner: alice, user: "a2", at: T0 + 2 }));
    const chats = await store.listChats(alice, { since: 0, limit: 20 });
    expect(chats.map((c) => c.chatId)).toEqual(["a", "b"]);
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

    // from is inclusive, to exclusive
    const window = await store.summarizeUsage({ from: T0 + 10, to: T0 + 20 });
    expect(window.totals).toEqual({ requests: 1, inputTokens: 20, outputTokens: 2, points: 2 });
    const sales = await store.summarizeUsage({ appId: "sales" });
    expect(sales.totals.requests).toBe(1);
    expect(sales.apps.map((a) => a.appId)).toEqual(["sales"]);

    const none = await store.summarizeUsage({ from: T0 + 1000 });
    expect(none).toEqual({ totals: { requests: 0, inputTokens: 0, outputTokens: 0, points: 0 }, apps: [], models: [] });
  });

  it("adds each usage row's points to every named spend scope once", async () => {
    expect(await store.getSpent("app:support")).toBe(0);
    await store.recordUsage(usage({ points: 2 }), ["app:support", "key:web"]);
    await store.recordUsage(usage({ points: 3 }), ["app:support", "app:support"]);
    expect(await store.getSpent("app:support")).toBe(5);
    expect(await store.getSpent("key:web")).toBe(2);
    expect(await store.getSpent("share:public")).toBe(0);
  });
});

describe("persistence", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "sluice-store-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("upgrades a version-1 database to the latest schema and keeps its chats", async () => {
    const path = join(dir, "v1.db");
    const old = new Database(path);
    old.exec(MIGRATIONS[0]!);
    old.pragma("user_version = 1");
    old.prepare("INSERT INTO chats (app_id, chat_id, share_id, uid, title, created_at, updated_at) VALUES ('support', 'c9', 'public', 'alice', 'kept', ?, ?)").run(T0, T0);
    old.close();
    const upgraded = createSqliteStore(path);
    expect(await upgraded.listChats(alice, { since: 0, limit: 20 })).toEqual([{ chatId: "c9", title: "kept", updatedAt: T0 }]);
    await upgraded.close();
    const check = new Database(path);
    expect(check.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    check.close();
  });

  it("moves version-2 messages into round chains in order, keeping odd turns, and goes on appending", async () => {
    const path = join(dir, "v2.db");
    const old = new Database(path);
    old.exec(MIGRATIONS[0]! + MIGRATIONS[1]!);
    old.pragma("user_version = 2");
    const chat = old.prepare("INSERT INTO chats (app_id, chat_id, share_id, uid, title, created_at, updated_at) VALUES (?, ?, NULL, NULL, 't', ?, ?)");
    const message = old.prepare("INSERT INTO messages (app_id, chat_id, role, content, created_at) VALUES (?, ?, ?, ?, ?)");
    chat.run("support", "c1", T0, T0);
    chat.run("support", "c2", T0, T0);
    chat.run("sales", "c1", T0, T0);
    // interleaved chats; c2 has a user turn without an answer and an answer without a question
    const rows: [string, string, "user" | "assistant", string][] = [
      ["support", "c1", "user", "q1"], ["support", "c2", "user", "lonely"], ["support", "c1", "assistant", "a1"],
      ["sales", "c1", "user", "s1"], ["support", "c2", "user", "x1"], ["support", "c2", "assistant", "y1"],
      ["support", "c2", "assistant", "stray"], ["support", "c1", "user", "q2"], ["sales", "c1", "assistant", "t1"],
      ["support", "c1", "assistant", "a2"],
    ];
    rows.forEach(([appId, chatId, role, content], i) => message.run(appId, chatId, role, content, T0 + i));
    old.close();

    const upgraded = createSqliteStore(path);
    try {
      const contents = async (appId: string, chatId: string, limit = 100) =>
        (await upgraded.loadMessages(appId, chatId, limit)).map((m) => `${m.role}:${m.content}`);
      expect(await contents("support", "c1")).toEqual(["user:q1", "assistant:a1", "user:q2", "assistant:a2"]);
      expect(await contents("support", "c2")).toEqual(["user:lonely", "user:x1", "assistant:y1", "assistant:stray"]);
      expect(await contents("sales", "c1")).toEqual(["user:s1", "assistant:t1"]);
      expect(await contents("support", "c2", 3)).toEqual(["user:x1", "assistant:y1", "assistant:stray"]);
      await upgraded.appendRound(round({ chatId: "c2", user: "new" }));
      expect(await contents("support", "c2", 2)).toEqual(["user:new", "assistant:re: new"]);
    } finally {
      await upgraded.close();
    }
    const check = new Database(path, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    expect(check.prepare("SELECT name FROM sqlite_master WHERE name = 'messages'").get()).toBeUndefined();
    check.close();
  });

  it("keeps chats, usage and spend across a close and reopen, creating the parent folder", async () => {
    const path = join(dir, "nested", "sluice.db");
    const first = createStore({ driver: "sqlite", path });
    await first.appendRound(round({ owner: alice, user: "remember me" }));
    await first.recordUsage(usage({ points: 4 }), ["share:public"]);
    await first.close();

    const second = createStore({ driver: "sqlite", path });
    try {
      await second.ping();
      expect((await second.loadMessages("support", "c1", 10)).map((m) => m.content)).toEqual(["remember me", "re: remember me"]);
      expect(await second.listChats(alice, { since: 0, limit: 20 })).toHaveLength(1);
      expect((await second.summarizeUsage({})).totals.requests).toBe(1);
      expect(await second.getSpent("share:public")).toBe(4);
    } finally {
      await second.close();
    }
  });

  it("opens a memory store and refuses the postgres driver for now", async () => {
    const memory = createStore({ driver: "memory" });
    await memory.ping();
    await memory.close();
    expect(() => createStore({ driver: "postgres", url: "postgres://127.0.0.1/sluice" })).toThrow(/not available yet/);
  });
});
