// Group reads of the postgres store (src/store/postgres-read-batch.ts): which reads share a
// statement, and what a failed statement does to the reads in it.
import { describe, expect, it } from "vitest";
import { createPgReadBatcher } from "../src/store/postgres-read-batch.js";

/** A reader that records each batch it is asked and answers when told to. */
function heldReader() {
  const batches: number[][] = [];
  const pending: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];
  const read = createPgReadBatcher(async (keys: number[]) => {
    batches.push(keys);
    await new Promise<void>((resolve, reject) => pending.push({ resolve, reject }));
    return keys.map((k) => `answer ${k}`);
  });
  /** Waits until `n` batches were asked for. */
  const asked = async (n: number) => {
    while (batches.length < n) await new Promise((resolve) => setImmediate(resolve));
  };
  return { read, batches, pending, asked };
}

describe("group reads", () => {
  it("sends the reads of one turn together, and those asked meanwhile in the next batch; each read gets its own answer", async () => {
    const r = heldReader();
    const first = [1, 2, 3].map((k) => r.read(k));
    await r.asked(1);
    const second = [4, 5].map((k) => r.read(k));
    const third = r.read(6);
    r.pending[0]!.resolve();
    expect(await Promise.all(first)).toEqual(["answer 1", "answer 2", "answer 3"]);
    await r.asked(2);
    r.pending[1]!.resolve();
    expect(await Promise.all([...second, third])).toEqual(["answer 4", "answer 5", "answer 6"]);
    expect(r.batches).toEqual([[1, 2, 3], [4, 5, 6]]);
  });

  it("fails the reads of a statement that failed and those waiting for it; a read after them starts afresh", async () => {
    const r = heldReader();
    const failed = [1, 2].map((k) => r.read(k));
    await r.asked(1);
    const waiting = r.read(3);
    r.pending[0]!.reject(new Error("gone"));
    for (const read of [...failed, waiting]) await expect(read).rejects.toThrow("gone");
    const after = r.read(4);
    await r.asked(2);
    r.pending[1]!.resolve();
    expect(await after).toBe("answer 4");
  });
});
