// The Store contract's records (see store-contract.ts): usage rows and spend, created keys and key
// use, share-link uids and stored responses, and the bounds on the tables that expire.
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/types.js";
import { DAY, T0, createdKey, response, usage } from "./store-rows.js";

export function describeRecordContract(current: () => Store): void {
  describe("usage and spend", () => {
    it("summarises usage overall, per app and per model, filtered by from, to and appId", async () => {
      const store = current();
      await store.recordUsage(usage({ time: T0, inputTokens: 10, outputTokens: 5, points: 1.5 }), []);
      await store.recordUsage(usage({ time: T0 + 10, model: "qwen", inputTokens: 20, outputTokens: 2, points: 2 }), []);
      await store.recordUsage(usage({ time: T0 + 20, appId: "sales", inputTokens: 1, outputTokens: 1, points: 0.5 }), []);

      const all = await store.summarizeUsage({});
      expect(all).not.toHaveProperty("finishReasons");
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

    it("groups usage by any of its columns and by time buckets, the end user and cached tokens kept, filtered alike", async () => {
      const store = current();
      const QUARTER = 15 * 60_000;
      const rows = [
        usage({ time: T0, keyName: "web", user: "ann", inputTokens: 10, outputTokens: 1, cachedTokens: 4, points: 0.5 }),
        usage({ time: T0 + QUARTER - 1, keyName: "web", user: "ann", inputTokens: 20, outputTokens: 2, cachedTokens: 0, points: 0.25 }),
        usage({ time: T0 + QUARTER, keyName: "web", user: null, inputTokens: 30, outputTokens: 3, cachedTokens: 8, points: 1 }),
        usage({ time: T0 + 2 * QUARTER, keyName: null, shareId: "pub", user: "visitor", appId: "sales", inputTokens: 40, outputTokens: 4, cachedTokens: 0, points: 2 }),
      ];
      for (const row of rows) await store.recordUsage(row, []);
      const sorted = (groups: Awaited<ReturnType<Store["groupUsage"]>>) => [...groups].sort((a, b) => JSON.stringify([a.values, a.bucket]).localeCompare(JSON.stringify([b.values, b.bucket])));

      expect(sorted(await store.groupUsage({ by: ["key", "user"] }))).toEqual(sorted([
        { values: ["web", "ann"], requests: 2, inputTokens: 30, outputTokens: 3, cachedTokens: 4, points: 0.75 },
        { values: ["web", null], requests: 1, inputTokens: 30, outputTokens: 3, cachedTokens: 8, points: 1 },
        { values: [null, "visitor"], requests: 1, inputTokens: 40, outputTokens: 4, cachedTokens: 0, points: 2 },
      ]));
      const buckets = (await store.groupUsage({ by: ["share"], bucketMs: QUARTER, from: T0 + 1 })).sort((a, b) => a.bucket! - b.bucket!);
      const b0 = Math.floor(T0 / QUARTER);
      // from T0 + 1: the first row is left out; a quarter's last millisecond stays in it
      expect(buckets.map((g) => [g.values, g.bucket, g.requests])).toEqual([
        [[null], b0, 1],
        [[null], b0 + 1, 1],
        [["pub"], b0 + 2, 1],
      ]);
      expect(await store.groupUsage({ by: [], appId: "sales" })).toEqual([{ values: [], requests: 1, inputTokens: 40, outputTokens: 4, cachedTokens: 0, points: 2 }]);
      expect(await store.groupUsage({ by: ["app"], from: T0 + 1000 * QUARTER })).toEqual([]);
    });

    it("groups usage by finish reason when asked: rows without one first, then by name, filtered alike", async () => {
      const store = current();
      const reasons = ["stop", "length", null, "stop", "client_abort", null, "Stop"];
      for (const [i, finishReason] of reasons.entries()) {
        await store.recordUsage(usage({ time: T0 + i, finishReason, inputTokens: i, outputTokens: 1, points: 0.5 }), []);
      }
      const grouped = await store.summarizeUsage({ groupBy: "finishReason" });
      expect(grouped.totals).toEqual({ requests: 7, inputTokens: 21, outputTokens: 7, points: 3.5 });
      expect(grouped.models).toEqual([{ model: "glm", requests: 7, inputTokens: 21, outputTokens: 7, points: 3.5 }]);
      expect(grouped.finishReasons).toEqual([
        { finishReason: null, requests: 2, inputTokens: 7, outputTokens: 2, points: 1 },
        { finishReason: "Stop", requests: 1, inputTokens: 6, outputTokens: 1, points: 0.5 },
        { finishReason: "client_abort", requests: 1, inputTokens: 4, outputTokens: 1, points: 0.5 },
        { finishReason: "length", requests: 1, inputTokens: 1, outputTokens: 1, points: 0.5 },
        { finishReason: "stop", requests: 2, inputTokens: 3, outputTokens: 2, points: 1 },
      ]);
      expect((await store.summarizeUsage({ groupBy: "finishReason", from: T0 + 2, to: T0 + 4 })).finishReasons).toEqual([
        { finishReason: null, requests: 1, inputTokens: 2, outputTokens: 1, points: 0.5 },
        { finishReason: "stop", requests: 1, inputTokens: 3, outputTokens: 1, points: 0.5 },
      ]);
      expect((await store.summarizeUsage({ groupBy: "finishReason", appId: "sales" })).finishReasons).toEqual([]);
    });

    it("sums points as SQLite does (compensated: ten 0.1 make 1) and orders names by their bytes", async () => {
      const store = current();
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
      const store = current();
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
      const store = current();
      await Promise.all(Array.from({ length: 40 }, (_, i) => store.recordUsage(usage({ points: 0.5, finishReason: i % 2 ? "stop" : null }), ["app:support", "key:web"])));
      expect(await store.getSpent("app:support")).toBe(20);
      const summary = await store.summarizeUsage({ groupBy: "finishReason" });
      expect(summary.totals).toEqual({ requests: 40, inputTokens: 400, outputTokens: 200, points: 20 });
      expect(summary.finishReasons?.map((r) => [r.finishReason, r.requests])).toEqual([[null, 20], ["stop", 20]]);
    });
  });

  describe("created keys and key use", () => {
    it("adds keys, refuses a name already taken (revoked too), and lists them oldest first", async () => {
      const store = current();
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

    it("finds a created key by its digest, revoked too; an unknown digest is undefined", async () => {
      const store = current();
      expect(await store.findCreatedKey("digest-of-k")).toBeUndefined();
      await store.createKey(createdKey({ name: "k", kind: "global", appId: null, tpm: 10, expiresAt: T0 + 99 }));
      await store.createKey(createdKey({ name: "other" }));
      expect(await store.findCreatedKey("digest-of-k")).toEqual(createdKey({ name: "k", kind: "global", appId: null, tpm: 10, expiresAt: T0 + 99 }));
      await store.revokeKey("k", T0 + 10);
      expect(await store.findCreatedKey("digest-of-k")).toEqual(createdKey({ name: "k", kind: "global", appId: null, tpm: 10, expiresAt: T0 + 99, revokedAt: T0 + 10 }));
      expect(await store.findCreatedKey("digest-of-nobody")).toBeUndefined();
    });

    it("revokes once: a second revoke keeps the first time; an unknown name is undefined", async () => {
      const store = current();
      await store.createKey(createdKey({ name: "k" }));
      expect(await store.revokeKey("k", T0 + 10)).toEqual(createdKey({ name: "k", revokedAt: T0 + 10 }));
      expect(await store.revokeKey("k", T0 + 20)).toEqual(createdKey({ name: "k", revokedAt: T0 + 10 }));
      expect(await store.revokeKey("nobody", T0)).toBeUndefined();
    });

    it("moves lastUsedAt forward only, and a new key starts with no use under its name", async () => {
      const store = current();
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

  describe("share-link uids", () => {
    it("finds the uid remembered for a token digest since a time; a later remember replaces it, an earlier one not", async () => {
      const store = current();
      expect(await store.findShareUid("public", "d1", 0)).toBeUndefined();
      await store.rememberShareUid("public", "d1", "u1", T0);
      await store.rememberShareUid("vip", "d1", "v1", T0);
      expect(await store.findShareUid("public", "d1", T0)).toBe("u1");
      expect(await store.findShareUid("public", "d1", T0 + 1)).toBeUndefined();
      expect(await store.findShareUid("public", "d2", 0)).toBeUndefined();
      await store.rememberShareUid("public", "d1", "u2", T0 + 5);
      await store.rememberShareUid("public", "d1", "stale", T0 + 1);
      expect(await store.findShareUid("public", "d1", T0 + 5)).toBe("u2");
      expect(await store.findShareUid("vip", "d1", 0)).toBe("v1");
      const odd = "a\u0000b\uffff😀";
      await store.rememberShareUid(odd, odd, odd, T0);
      expect(await store.findShareUid(odd, odd, T0)).toBe(odd);
    });

    it("purges uids older than 30 days as new ones are remembered, keeping the recent", { timeout: 30_000 }, async () => {
      const store = current();
      for (let i = 0; i < 300; i++) await store.rememberShareUid("public", `old-${i}`, `u${i}`, T0);
      await store.rememberShareUid("public", "recent", "r", T0 + 2 * DAY);
      expect(await store.findShareUid("public", "old-0", 0)).toBe("u0");
      for (let i = 0; i < 32; i++) await store.rememberShareUid("public", `new-${i}`, `n${i}`, T0 + 31 * DAY);
      for (let i = 0; i < 300; i += 23) expect(await store.findShareUid("public", `old-${i}`, 0)).toBeUndefined();
      expect(await store.findShareUid("public", "old-299", 0)).toBeUndefined();
      expect(await store.findShareUid("public", "recent", 0)).toBe("r");
      expect(await store.findShareUid("public", "new-0", 0)).toBe("n0");
    });
  });

  describe("stored responses", () => {
    it("keeps a response for its app until it expires; another app never sees it", async () => {
      const store = current();
      const odd = "a\u0000b\uffff😀 \ud800";
      const row = response({ id: "resp_1", previousId: "resp_0", keyName: null, input: `["${odd}"]` });
      await store.saveResponse(row);
      expect(await store.getResponse("support", "resp_1", T0)).toEqual({ ...row, input: `["a\u0000b\uffff😀 \ufffd\ufffd\ufffd"]` });
      expect(await store.getResponse("support", "resp_1", row.expiresAt - 1)).toBeDefined();
      expect(await store.getResponse("support", "resp_1", row.expiresAt)).toBeUndefined();
      expect(await store.getResponse("sales", "resp_1", T0)).toBeUndefined();
      expect(await store.getResponse("support", "resp_2", T0)).toBeUndefined();
    });

    it("replaces a response saved again under its id, and keeps the same id of two apps apart", async () => {
      const store = current();
      await Promise.all([
        store.saveResponse(response({ id: "r", output: "first" })),
        store.saveResponse(response({ id: "r", output: "second" })),
        store.saveResponse(response({ id: "r", appId: "sales", output: "sales" })),
      ]);
      expect((await store.getResponse("support", "r", T0))?.output).toBe("second");
      expect((await store.getResponse("sales", "r", T0))?.output).toBe("sales");
    });

    it("deletes a live response of the app once; another app's, a missing or an expired one is false", async () => {
      const store = current();
      await store.saveResponse(response({ id: "r" }));
      await store.saveResponse(response({ id: "gone", expiresAt: T0 + 10 }));
      expect(await store.deleteResponse("sales", "r", T0)).toBe(false);
      expect(await store.getResponse("support", "r", T0)).toBeDefined();
      expect(await store.deleteResponse("support", "r", T0)).toBe(true);
      expect(await store.deleteResponse("support", "r", T0)).toBe(false);
      expect(await store.getResponse("support", "r", T0)).toBeUndefined();
      expect(await store.deleteResponse("support", "gone", T0 + 10)).toBe(false);
      expect(await store.getResponse("support", "gone", T0)).toBeUndefined();
      const live = response({ id: "live", createdAt: Date.now(), expiresAt: Date.now() + DAY });
      await store.saveResponse(live);
      expect(await store.deleteResponse("support", "live")).toBe(true);
    });

    it("reads and deletes a key's response for that key only, when asked by key (issue 27)", async () => {
      const store = current();
      await store.saveResponse(response({ id: "r", keyName: "web" }));
      expect(await store.getResponse("support", "r", T0, "web")).toBeDefined();
      expect(await store.getResponse("support", "r", T0, "other")).toBeUndefined();
      expect(await store.deleteResponse("support", "r", T0, "other")).toBe(false);
      expect(await store.getResponse("support", "r", T0)).toBeDefined();
      expect(await store.deleteResponse("support", "r", T0, "web")).toBe(true);
      expect(await store.getResponse("support", "r", T0)).toBeUndefined();
    });

    it("deletes every response continued from a deleted one, at any depth, and nothing else (issue 27)", async () => {
      const store = current();
      // root ← child ← grandchild, root ← sibling; an unrelated one; another app's child of the same id
      await store.saveResponse(response({ id: "root" }));
      await store.saveResponse(response({ id: "child", previousId: "root" }));
      await store.saveResponse(response({ id: "grandchild", previousId: "child", keyName: "ops" }));
      await store.saveResponse(response({ id: "sibling", previousId: "root" }));
      await store.saveResponse(response({ id: "apart" }));
      await store.saveResponse(response({ id: "theirs", appId: "sales", previousId: "root" }));
      expect(await store.deleteResponse("support", "child", T0)).toBe(true);
      expect(await store.getResponse("support", "grandchild", T0)).toBeUndefined();
      expect(await store.getResponse("support", "root", T0)).toBeDefined();
      expect(await store.getResponse("support", "sibling", T0)).toBeDefined();
      expect(await store.deleteResponse("support", "root", T0, "web")).toBe(true);
      for (const id of ["root", "sibling"]) expect(await store.getResponse("support", id, T0)).toBeUndefined();
      expect(await store.getResponse("support", "apart", T0)).toBeDefined();
      expect(await store.getResponse("sales", "theirs", T0)).toBeDefined();
    });

    it("counts an app's live responses and their UTF-8 bytes (issue 27)", async () => {
      const store = current();
      expect(await store.responseUsage("support", T0)).toEqual({ rows: 0, bytes: 0 });
      await store.saveResponse(response({ id: "a", input: "[\"é\"]", output: "{}" }));
      await store.saveResponse(response({ id: "b", input: "[]", output: "{\"x\":1}" }));
      await store.saveResponse(response({ id: "old", input: "[]", output: "{}", expiresAt: T0 + 10 }));
      await store.saveResponse(response({ id: "c", appId: "sales" }));
      expect(await store.responseUsage("support", T0)).toEqual({ rows: 3, bytes: 6 + 2 + 2 + 7 + 2 + 2 });
      expect(await store.responseUsage("support", T0 + 10)).toEqual({ rows: 2, bytes: 6 + 2 + 2 + 7 });
      // saved again: counted once, at its new size
      await store.saveResponse(response({ id: "b", input: "[]", output: "{}" }));
      expect(await store.responseUsage("support", T0 + 10)).toEqual({ rows: 2, bytes: 6 + 2 + 2 + 2 });
    });

    it("purges expired responses as new ones are saved, keeping the live ones", { timeout: 30_000 }, async () => {
      const store = current();
      await Promise.all(Array.from({ length: 300 }, (_, i) => store.saveResponse(response({ id: `old-${i}`, expiresAt: T0 + 1000 }))));
      await store.saveResponse(response({ id: "kept", expiresAt: T0 + 5000 }));
      // asked as of a time before they expired: found until purged
      expect(await store.getResponse("support", "old-0", T0)).toBeDefined();
      for (let i = 0; i < 32; i++) await store.saveResponse(response({ id: `new-${i}`, createdAt: T0 + 2000, expiresAt: T0 + 9000 }));
      await store.saveResponse(response({ id: "flush", createdAt: T0 + 2000, expiresAt: T0 + 9000 }));
      for (let i = 0; i < 300; i += 23) expect(await store.getResponse("support", `old-${i}`, T0)).toBeUndefined();
      expect(await store.getResponse("support", "kept", T0)).toBeDefined();
      expect(await store.getResponse("support", "new-31", T0)).toBeDefined();
    });
  });

  it("answers a ping", async () => {
    await expect(current().ping()).resolves.toBeUndefined();
  });
}
