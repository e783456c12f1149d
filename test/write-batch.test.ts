// Group commit: writes of one tick share a commit; a failing write fails alone.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { createWriteBatcher } from "../src/store/write-batch.js";

function setup() {
  const db = new Database(":memory:");
  db.exec("CREATE TABLE t (v INTEGER NOT NULL CHECK (v >= 0))");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const committed: number[] = [];
  const write = createWriteBatcher(db)((v: number) => void insert.run(v), (v) => committed.push(v));
  const values = () => (db.prepare("SELECT v FROM t ORDER BY rowid").all() as { v: number }[]).map((r) => r.v);
  return { write, values, committed };
}

describe("write batcher", () => {
  it("commits the writes of one tick together, in order, and resolves each after its commit", async () => {
    const { write, values, committed } = setup();
    await Promise.all([write(1), write(2), write(3)]);
    expect(values()).toEqual([1, 2, 3]);
    expect(committed).toEqual([1, 2, 3]);
  });

  it("fails only the bad write of a batch; the others are committed", async () => {
    const { write, values, committed } = setup();
    const results = await Promise.allSettled([write(1), write(-5), write(3)]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(values()).toEqual([1, 3]);
    expect(committed).toEqual([1, 3]);
  });
});
