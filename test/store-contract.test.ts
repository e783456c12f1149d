// The Store contract (test/support/store-contract.ts) against every implementation: memory, an
// SQLite file and PostgreSQL (a throwaway server). Then one seeded sequence of calls against all
// three at once: every answer must be the same.
import { describe, expect, it } from "vitest";
import { createStore } from "../src/store/index.js";
import type { ChatOwner, Store, UsageSummary } from "../src/store/types.js";
import { useTempDir } from "./support/fixtures.js";
import { usePostgres } from "./support/postgres.js";
import { DAY, T0, chatOf, createdKey, describeStoreContract, history, response, round, usage } from "./support/store-contract.js";

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
  const rounded: UsageSummary = { totals: round(summary.totals), apps: summary.apps.map(round), models: summary.models.map(round) };
  if (summary.finishReasons) rounded.finishReasons = summary.finishReasons.map(round);
  return rounded;
}

const OWNERS: ChatOwner[] = [{ keyName: "web" }, { keyName: "other" }, { shareId: "public", uid: "alice" }, { shareId: "public", uid: "bob" }, { shareId: "vip", uid: "alice" }];
const SHARE_USERS = OWNERS.slice(2) as Array<{ shareId: string; uid: string }>;
const MAX_BYTES = [Number.POSITIVE_INFINITY, 0, 5, 40, 400, 2000];

/** Calls every Store method with generated arguments; returns what each call answered. */
async function exercise(store: Store, seed: number): Promise<unknown[]> {
  const r = seeded(seed);
  const answers: unknown[] = [];
  const chats = ["c1", "c2", "c3", "😀", "nul\u0000"];
  for (let step = 0; step < 300; step++) {
    const at = T0 + Math.floor(r.next() * 40) * DAY / 4;
    const appId = r.pick(["support", "sales", "Sales"]);
    const chatId = r.pick(chats);
    switch (r.pick(["round", "round", "usage", "usage", "open", "open", "list", "summary", "spent", "key", "uid", "response"] as const)) {
      case "round":
        answers.push(await store.appendRound(round({
          appId, chatId, owner: r.pick(OWNERS), shared: r.next() < 0.2, user: r.pick(TEXTS), assistant: r.pick(TEXTS), at,
          variables: r.next() < 0.3 ? { n: step, text: r.pick(TEXTS) } : undefined,
        })));
        break;
      case "usage":
        await store.recordUsage(
          usage({ time: at, appId, model: r.pick(["glm", "qwen", "Glm"]), points: r.pick(POINTS), inputTokens: step, outputTokens: step % 7, chatId: r.next() < 0.5 ? chatId : null, finishReason: r.pick(["stop", "length", null, "Stop"]) }),
          [`app:${appId}`, r.pick(["key:web", "share:public", `app:${appId}`])],
        );
        break;
      case "open": {
        const who = r.next() < 0.2 ? null : r.pick(OWNERS);
        const opts = { limit: Math.floor(r.next() * 30) - 2, maxBytes: r.pick(MAX_BYTES), create: r.next() < 0.2 };
        answers.push(await store.openChat(appId, chatId, who, opts));
        break;
      }
      case "list":
        answers.push(await store.listChats(r.pick(SHARE_USERS), { since: at - 5 * DAY, limit: 1 + Math.floor(r.next() * 5) }));
        break;
      case "summary":
        answers.push(reportSums(await store.summarizeUsage({
          ...(r.next() < 0.5 ? {} : { from: at - 3 * DAY, to: at + 0.5, appId: r.next() < 0.5 ? appId : undefined }),
          ...(r.next() < 0.5 ? { groupBy: "finishReason" as const } : {}),
        })));
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
      case "uid": {
        const digest = r.pick(["d1", "d2", "nul\u0000"]);
        if (r.next() < 0.5) await store.rememberShareUid(r.pick(["public", "vip"]), digest, r.pick(TEXTS), at);
        answers.push(await store.findShareUid(r.pick(["public", "vip"]), digest, at - r.pick([0, DAY, 40 * DAY])));
        break;
      }
      case "response": {
        const id = r.pick(["resp_1", "resp_2", "😀"]);
        const action = r.pick(["save", "save", "get", "delete"] as const);
        if (action === "save") await store.saveResponse(response({ id, appId, createdAt: at, expiresAt: at + r.pick([DAY, 5 * DAY]), input: r.pick(TEXTS), output: `${step}` }));
        else if (action === "get") answers.push(await store.getResponse(appId, id, at));
        else answers.push(await store.deleteResponse(appId, id, at));
        break;
      }
    }
  }
  const uses = await store.listKeyUse();
  answers.push(uses.sort((a, b) => (a.name < b.name ? -1 : 1)), reportSums(await store.summarizeUsage({ groupBy: "finishReason" })));
  return answers;
}

/** Rounds appended in bursts (many to one group commit: several chats, several rounds of a chat,
 *  owners, shared writers, variables and times in any order), each burst then read back whole. */
async function exerciseBursts(store: Store, seed: number): Promise<unknown[]> {
  const r = seeded(seed);
  const answers: unknown[] = [];
  const keys = ["support/c1", "support/c2", "sales/c1", "support/😀", "sales/nul\u0000", "support/c3"].map((k) => k.split("/") as [string, string]);
  const owners = OWNERS.slice(0, 4);
  for (let burst = 0; burst < 40; burst++) {
    const rounds = Array.from({ length: 1 + Math.floor(r.next() * 12) }, (_, i) => {
      const [appId, chatId] = r.pick(keys);
      const variables = r.next() < 0.3 ? { burst, i, text: r.pick(TEXTS) } : undefined;
      const owner = r.next() < 0.7 ? owners[burst % 4]! : r.pick(owners);
      return round({ appId, chatId, owner, shared: r.next() < 0.15, user: `${r.pick(TEXTS)} ${burst}.${i}`, assistant: r.pick(TEXTS), at: T0 + Math.floor(r.next() * 20) * 1000, variables });
    });
    answers.push(await Promise.all(rounds.map((input) => store.appendRound(input))));
    for (const [appId, chatId] of keys) answers.push(await chatOf(store, appId, chatId), await history(store, appId, chatId, Math.floor(r.next() * 9)));
    for (const owner of SHARE_USERS.slice(0, 2)) answers.push(await store.listChats(owner, { since: 0, limit: 10 }));
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
