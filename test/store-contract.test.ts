// The Store contract (test/support/store-contract.ts) against every implementation: memory, an
// SQLite file and PostgreSQL (a throwaway server). Then one seeded sequence of calls against all
// three at once: every answer must be the same.
import { describe, expect, it } from "vitest";
import { createStore } from "../src/store/index.js";
import type { Store, UsageSummary } from "../src/store/types.js";
import { useTempDir } from "./support/fixtures.js";
import { usePostgres } from "./support/postgres.js";
import { DAY, T0, createdKey, describeStoreContract, round, usage } from "./support/store-contract.js";

const tmp = useTempDir("sluice-contract-");
const postgres = usePostgres();
let files = 0;
const openSqlite = async () => createStore({ driver: "sqlite", path: tmp.file(`store-${++files}.db`) });
const openPostgres = async () => createStore({ driver: "postgres", url: await postgres.createDatabase() });

describeStoreContract("memory", async () => createStore({ driver: "memory" }));
describeStoreContract("SQLite file", openSqlite);
describeStoreContract("PostgreSQL", openPostgres);

/** A small deterministic generator (mulberry32): the same calls on every run. */
function seeded(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]! };
}

const TEXTS = ["hi", "  spaced\tout  ", "😀 emoji", "nul\u0000inside", "é", "\uffff", "x".repeat(300), ""];
const POINTS = [0, 0.1, 0.06, 1 / 3, 2.5, 1e-7, 123456.789];

/** Usage-report sums to 14 digits. SQLite adds points in the order of its query plan with a
 *  compensated sum, Postgres exactly (numeric): they may part in the last bit of a long sum. */
function reportSums(summary: UsageSummary): UsageSummary {
  const round = <T extends { points: number }>(t: T): T => ({ ...t, points: Number(t.points.toPrecision(14)) });
  return { totals: round(summary.totals), apps: summary.apps.map(round), models: summary.models.map(round) };
}

/** Calls every Store method with generated arguments; returns what each call answered. */
async function exercise(store: Store, seed: number): Promise<unknown[]> {
  const r = seeded(seed);
  const answers: unknown[] = [];
  const chats = ["c1", "c2", "c3", "😀", "nul\u0000"];
  const owners = [null, { shareId: "public", uid: "alice" }, { shareId: "public", uid: "bob" }, { shareId: "vip", uid: "alice" }];
  for (let step = 0; step < 300; step++) {
    const at = T0 + Math.floor(r.next() * 40) * DAY / 4;
    const appId = r.pick(["support", "sales", "Sales"]);
    const chatId = r.pick(chats);
    switch (r.pick(["round", "round", "usage", "usage", "read", "list", "summary", "spent", "key"] as const)) {
      case "round":
        await store.appendRound(round({
          appId, chatId, owner: r.pick(owners), user: r.pick(TEXTS), assistant: r.pick(TEXTS), at,
          variables: r.next() < 0.3 ? { n: step, text: r.pick(TEXTS) } : undefined,
        }));
        break;
      case "usage":
        await store.recordUsage(
          usage({ time: at, appId, model: r.pick(["glm", "qwen", "Glm"]), points: r.pick(POINTS), inputTokens: step, outputTokens: step % 7, chatId: r.next() < 0.5 ? chatId : null }),
          [`app:${appId}`, r.pick(["key:web", "share:public", `app:${appId}`])],
        );
        break;
      case "read":
        answers.push(await store.getChat(appId, chatId), await store.loadMessages(appId, chatId, Math.floor(r.next() * 30)));
        break;
      case "list":
        answers.push(await store.listChats(r.pick(owners.slice(1))!, { since: at - 5 * DAY, limit: 1 + Math.floor(r.next() * 5) }));
        break;
      case "summary":
        answers.push(reportSums(await store.summarizeUsage(r.next() < 0.5 ? {} : { from: at - 3 * DAY, to: at + 0.5, appId: r.next() < 0.5 ? appId : undefined })));
        break;
      case "spent":
        answers.push(await store.getSpent(r.pick(["app:support", "app:sales", "key:web", "share:public"])));
        break;
      case "key": {
        const name = r.pick(["k1", "k2", "K1"]);
        answers.push(await store.createKey(createdKey({ name, sha256: `d-${step}`, createdAt: at })));
        if (r.next() < 0.3) answers.push(await store.revokeKey(name, at + 1));
        await store.recordKeyUse([{ name, lastUsedAt: at }]);
        answers.push(await store.listCreatedKeys());
        break;
      }
    }
  }
  const uses = await store.listKeyUse();
  answers.push(uses.sort((a, b) => (a.name < b.name ? -1 : 1)), reportSums(await store.summarizeUsage({})));
  return answers;
}

/** Rounds appended in bursts (many to one group commit: several chats, several rounds of a chat,
 *  owners, variables and times in any order), each burst then read back whole. */
async function exerciseBursts(store: Store, seed: number): Promise<unknown[]> {
  const r = seeded(seed);
  const answers: unknown[] = [];
  const keys = ["support/c1", "support/c2", "sales/c1", "support/😀", "sales/nul\u0000", "support/c3"].map((k) => k.split("/") as [string, string]);
  const owners = [null, { shareId: "public", uid: "alice" }, { shareId: "vip", uid: "bob" }];
  for (let burst = 0; burst < 40; burst++) {
    const rounds = Array.from({ length: 1 + Math.floor(r.next() * 12) }, (_, i) => {
      const [appId, chatId] = r.pick(keys);
      const variables = r.next() < 0.3 ? { burst, i, text: r.pick(TEXTS) } : undefined;
      return round({ appId, chatId, owner: r.pick(owners), user: `${r.pick(TEXTS)} ${burst}.${i}`, assistant: r.pick(TEXTS), at: T0 + Math.floor(r.next() * 20) * 1000, variables });
    });
    await Promise.all(rounds.map((input) => store.appendRound(input)));
    for (const [appId, chatId] of keys) answers.push(await store.getChat(appId, chatId), await store.loadMessages(appId, chatId, Math.floor(r.next() * 9)));
    for (const owner of owners.slice(1)) answers.push(await store.listChats(owner!, { since: 0, limit: 10 }));
  }
  return answers;
}

describe("the three stores side by side", () => {
  it("answer rounds appended in bursts identically", { timeout: 60_000 }, async () => {
    const stores = [createStore({ driver: "memory" }), await openSqlite(), await openPostgres()];
    try {
      const [memory, sqlite, postgresAnswers] = await Promise.all(stores.map((s) => exerciseBursts(s, 7)));
      expect(sqlite).toEqual(memory);
      expect(postgresAnswers).toEqual(memory);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("answer a seeded sequence of 300 calls identically", { timeout: 60_000 }, async () => {
    const stores = [createStore({ driver: "memory" }), await openSqlite(), await openPostgres()];
    try {
      const [memory, sqlite, postgresAnswers] = await Promise.all(stores.map((s) => exercise(s, 20250101)));
      expect(memory!.length).toBeGreaterThan(50);
      expect(sqlite).toEqual(memory);
      expect(postgresAnswers).toEqual(memory);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
