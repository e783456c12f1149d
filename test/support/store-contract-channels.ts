// The Store contract for channel records (FastGPT's AI Proxy API, docs/fastgpt.md#channels): numbers
// never given twice, ids config.json names kept, writes all or nothing, statuses by id.
import { expect, it } from "vitest";
import type { Store } from "../../src/store/types.js";

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
