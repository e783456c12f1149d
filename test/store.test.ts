// What only the SQLite store has: its schema versions and upgrades, and its file across a close and
// reopen. The behaviour every store shares is the contract in test/store-contract.test.ts.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { createStore } from "../src/store/index.js";
import { MIGRATIONS } from "../src/store/migrations.js";
import { createSqliteStore } from "../src/store/sqlite.js";
import { T0, alice, round, usage } from "./support/store-contract.js";

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

  it("opens a memory store", async () => {
    const memory = createStore({ driver: "memory" });
    await memory.ping();
    await memory.close();
  });
});
