// Group commit: writes of one tick share a commit; a failing write fails alone; what a batch gathers
// (the SQLite store's usage rows and spend) is written once at its end.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { createSqliteStore } from "../src/store/sqlite.js";
import type { UsageRow } from "../src/store/types.js";
import { createWriteBatcher, type Gathered } from "../src/store/write-batch.js";

function setup() {
  const db = new Database(":memory:");
  db.exec("CREATE TABLE t (v INTEGER NOT NULL CHECK (v >= 0))");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const committed: number[] = [];
  const write = createWriteBatcher(db)((v: number) => (insert.run(v), v * 10), (result, v) => committed.push(v, result));
  const values = () => (db.prepare("SELECT v FROM t ORDER BY rowid").all() as { v: number }[]).map((r) => r.v);
  return { write, values, committed };
}

describe("write batcher", () => {
  it("commits the writes of one tick together, in order, and resolves each after its commit with what it returned", async () => {
    const { write, values, committed } = setup();
    expect(await Promise.all([write(1), write(2), write(3)])).toEqual([10, 20, 30]);
    expect(values()).toEqual([1, 2, 3]);
    expect(committed).toEqual([1, 10, 2, 20, 3, 30]);
  });

  it("fails only the bad write of a batch; the others are committed", async () => {
    const { write, values, committed } = setup();
    const results = await Promise.allSettled([write(1), write(-5), write(3)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(results[2]).toEqual({ status: "fulfilled", value: 30 });
    expect(values()).toEqual([1, 3]);
    expect(committed).toEqual([1, 10, 3, 30]);
  });
});

describe("gathered writes", () => {
  it("are made at the batch's end, and a bad one still fails alone", async () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE t (v INTEGER NOT NULL CHECK (v >= 0))");
    const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
    let pending: number[] = [];
    const flushes: number[][] = [];
    const gathered: Gathered = {
      flush() {
        flushes.push(pending);
        for (const v of pending) insert.run(v);
        pending = [];
      },
      clear() {
        pending = [];
      },
    };
    const write = createWriteBatcher(db, [gathered])((v: number) => void pending.push(v));
    const results = await Promise.allSettled([write(1), write(-1), write(2)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    // the batch of three failed on the bad row; each was then written in a transaction of its own
    expect(flushes).toEqual([[1, -1, 2], [1], [-1], [2]]);
    expect(db.prepare("SELECT v FROM t ORDER BY v").all()).toEqual([{ v: 1 }, { v: 2 }]);
  });

  it("keep every usage row and every scope's spend when many land in one batch of the SQLite store", async () => {
    const row = (i: number): UsageRow => ({
      time: 1_000 + i,
      appId: i % 2 ? "a" : "b",
      keyName: i % 3 ? "k" : null,
      shareId: null,
      model: "m",
      channel: "c",
      inputTokens: i,
      outputTokens: 2 * i,
      points: i % 5 ? 0.25 : 0,
      status: 200,
      durationMs: 3,
      chatId: null,
      finishReason: i % 4 ? "stop" : null,
      cachedTokens: i % 3,
    });
    const store = createSqliteStore(":memory:");
    const rows = Array.from({ length: 75 }, (_, i) => row(i)); // more than one multi-row INSERT holds
    // a scope named twice in one row is spent once
    await Promise.all(rows.map((r) => store.recordUsage(r, [`app:${r.appId}`, "key:k", `app:${r.appId}`])));
    const sum = (f: (r: UsageRow) => number, of = rows) => of.reduce((s, r) => s + f(r), 0);
    const summary = await store.summarizeUsage({});
    expect(summary.totals).toEqual({ requests: 75, inputTokens: sum((r) => r.inputTokens), outputTokens: sum((r) => r.outputTokens), points: sum((r) => r.points) });
    expect(summary.apps.map((a) => [a.appId, a.requests])).toEqual([
      ["a", 37],
      ["b", 38],
    ]);
    expect(await store.getSpent("app:a")).toBeCloseTo(sum((r) => r.points, rows.filter((r) => r.appId === "a")), 9);
    expect(await store.getSpent("key:k")).toBeCloseTo(sum((r) => r.points), 9);
    await store.close();
  });
});
