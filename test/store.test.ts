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
import { DAY, T0, alice, expectUpgradedRecords, history, round, usage } from "./support/store-contract.js";

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
    // version 1 wrote a chat with its first two messages, in one transaction
    old.prepare("INSERT INTO chats (app_id, chat_id, share_id, uid, title, created_at, updated_at) VALUES ('support', 'c9', 'public', 'alice', 'kept', ?, ?)").run(T0, T0);
    old.prepare("INSERT INTO messages (app_id, chat_id, role, content, created_at) VALUES ('support', 'c9', 'user', 'kept', ?), ('support', 'c9', 'assistant', 'yes', ?)").run(T0, T0);
    old.close();
    const upgraded = createSqliteStore(path);
    expect(await upgraded.listChats(alice, { since: 0, limit: 20 })).toEqual([{ chatId: "c9", title: "kept", updatedAt: T0 }]);
    expect((await history(upgraded, "support", "c9")).map((m) => m.content)).toEqual(["kept", "yes"]);
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
        (await history(upgraded, appId, chatId, limit)).map((m) => `${m.role}:${m.content}`);
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

  it("upgrades a version-5 database written by the previous build: nothing lost, app-key chats stay any key's", async () => {
    const path = join(dir, "v5.db");
    const old = new Database(path);
    for (const step of MIGRATIONS.slice(0, 5)) old.exec(step);
    old.pragma("user_version = 5");
    // as the previous build wrote them: a chat row, then its rounds (the trigger links them)
    const chat = old.prepare("INSERT INTO chats (app_id, chat_id, share_id, uid, title, created_at, updated_at, variables) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    const addRound = old.prepare("INSERT INTO rounds (prev_id, app_id, chat_id, user, assistant, created_at) VALUES ((SELECT last_round_id FROM chats WHERE app_id = ? AND chat_id = ?), ?, ?, ?, ?, ?)");
    chat.run("support", "by-key", null, null, "key question", T0, T0, '{"lang":"en"}');
    chat.run("support", "by-alice", "public", "alice", "her question", T0, T0, null);
    for (let i = 0; i < 3; i++) addRound.run("support", "by-key", "support", "by-key", `k${i}`, `ka${i}`, T0 + i);
    addRound.run("support", "by-alice", "support", "by-alice", "her question", "her answer", T0 + 5);
    old.prepare(`INSERT INTO usage (time, app_id, key_name, share_id, model, channel, input_tokens, output_tokens, points, status, duration_ms, chat_id)
      VALUES (?, 'support', 'web', NULL, 'glm', 'local', 10, 5, 1.5, 200, 30, 'by-key')`).run(T0);
    old.prepare("INSERT INTO spend (scope, points) VALUES ('app:support', 1.5)").run();
    old.prepare("INSERT INTO api_keys (name, kind, app_id, sha256, max_usage_points, qpm, created_at) VALUES ('ops', 'app', 'support', 'digest-of-ops', -1, 0, ?)").run(T0);
    old.prepare("INSERT INTO key_activity (name, last_used_at) VALUES ('web', ?)").run(T0 + 9);
    old.close();

    const upgraded = createSqliteStore(path);
    try {
      await expectUpgradedRecords(upgraded);
      await upgraded.recordUsage(usage({ finishReason: "length" }), []);
      await upgraded.rememberShareUid("public", "digest", "alice", T0 + DAY);
      expect(await upgraded.findShareUid("public", "digest", T0)).toBe("alice");
    } finally {
      await upgraded.close();
    }
    const check = new Database(path, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
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
      expect((await history(second, "support", "c1", 10)).map((m) => m.content)).toEqual(["remember me", "re: remember me"]);
      expect(await second.listChats(alice, { since: 0, limit: 20 })).toHaveLength(1);
      expect((await second.summarizeUsage({})).totals.requests).toBe(1);
      expect(await second.getSpent("share:public")).toBe(4);
    } finally {
      await second.close();
    }
  });

  it("writes the bodies still waiting for their batch when it closes", async () => {
    const path = join(dir, "bodies.db");
    const bodies = { key: "b1", time: T0, request: '{"a":1}', response: "{}", requestTruncated: false, responseTruncated: false, expiresAt: Date.now() + DAY };
    const first = createStore({ driver: "sqlite", path });
    await first.recordUsage(usage({ requestId: "r1", bodiesKey: "b1" }), []);
    const saved = first.saveBodies(bodies);
    await first.close();
    await saved;

    const second = createStore({ driver: "sqlite", path });
    try {
      const { rows } = await second.searchUsage({ from: 0, to: Date.now(), limit: 10, offset: 0, order: { by: "id", desc: true } });
      expect(await second.getBodies(rows[0]!.id, Date.now())).toEqual(bodies);
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
