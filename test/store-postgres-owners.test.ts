// What the postgres store adds to the contract (test/store-contract.test.ts) about owners and records:
// a refused reader's statement never reaches the rounds, creators racing on two instances, a
// database of the previous schema version upgraded with nothing lost, and share-link uids and
// stored responses seen by every instance.
import pg from "pg";
import { describe, expect, it } from "vitest";
import { CHAT_SQL } from "../src/store/postgres-chats.js";
import { PG_MIGRATIONS } from "../src/store/postgres-migrations.js";
import { createPostgresStore } from "../src/store/postgres.js";
import type { ChatOwner, Store } from "../src/store/types.js";
import { usePostgres } from "./support/postgres.js";
import { DAY, T0, alice, chatOf, expectUpgradedRecords, history, response, round, usage, web } from "./support/store-contract.js";

const postgres = usePostgres();

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

async function withStores<T>(url: string, count: number, use: (stores: Store[]) => Promise<T>): Promise<T> {
  const stores = Array.from({ length: count }, () => createPostgresStore(url));
  try {
    return await use(stores);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
}

interface PlanNode {
  "Relation Name"?: string;
  "Actual Loops": number;
  Plans?: PlanNode[];
}

describe("the owner checked before the history", () => {
  it("runs the read of a refused reader without ever scanning the chat's rounds", async () => {
    const url = await postgres.createDatabase();
    await withStores(url, 1, async ([store]) => {
      await store!.appendRound(round({ owner: alice, user: "secret" }));
    });
    /** How often each table was scanned by the read statement, asked as `who`. */
    const scans = (who: ChatOwner | null) =>
      withClient(url, async (client) => {
        const [shareId, uid, keyName] = who === null ? [null, null, null] : "shareId" in who ? [who.shareId, who.uid, null] : [null, null, who.keyName];
        const values = [["support"], ["c1"], [4], [1_000_000], [who === null], [shareId], [uid], [keyName]];
        const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${CHAT_SQL.readChats.text}`, values);
        const loops: Record<string, number> = {};
        const walk = (node: PlanNode) => {
          if (node["Relation Name"]) loops[node["Relation Name"]] = (loops[node["Relation Name"]] ?? 0) + node["Actual Loops"];
          node.Plans?.forEach(walk);
        };
        walk((rows[0] as { "QUERY PLAN": Array<{ Plan: PlanNode }> })["QUERY PLAN"][0]!.Plan);
        return loops;
      });
    expect(await scans(alice)).toEqual({ chats: 1, rounds: 1 });
    expect(await scans(null)).toEqual({ chats: 1, rounds: 1 });
    for (const refused of [{ shareId: "public", uid: "bob" }, web]) expect(await scans(refused)).toEqual({ chats: 1, rounds: 0 });
  });
});

describe("creators racing on two instances", () => {
  it("gives each new chat to exactly one of many creators, whether they open it or append to it", { timeout: 30_000 }, async () => {
    await withStores(await postgres.createDatabase(), 2, async (stores) => {
      const whos: ChatOwner[] = Array.from({ length: 30 }, (_, i) => (i % 3 ? { keyName: `k${i}` } : { shareId: "public", uid: `u${i}` }));
      for (let chat = 0; chat < 5; chat++) {
        const opened = await Promise.all(
          whos.map((who, i) => stores[i % 2]!.openChat("support", `open-${chat}`, who, { limit: 10, maxBytes: 1000, create: true })),
        );
        const owners = whos.filter((_, i) => opened[i]!.status === "owned");
        expect(owners).toHaveLength(1);
        expect(opened.filter((o) => o.status === "not_owned")).toHaveLength(whos.length - 1);
        expect((await chatOf(stores[1]!, "support", `open-${chat}`))?.owner).toEqual(owners[0]);

        const written = await Promise.all(whos.map((owner, i) => stores[i % 2]!.appendRound(round({ chatId: `append-${chat}`, owner, user: `q${i}` }))));
        expect(written.filter(Boolean)).toHaveLength(1);
        const winner = written.indexOf(true);
        expect((await history(stores[0]!, "support", `append-${chat}`)).map((m) => m.content)).toEqual([`q${winner}`, `re: q${winner}`]);
        expect((await chatOf(stores[0]!, "support", `append-${chat}`))?.owner).toEqual(whos[winner]);
      }
    });
  });
});

describe("records on every instance", () => {
  it("finds a share-link uid and a stored response on the other instance, and a deletion too", async () => {
    await withStores(await postgres.createDatabase(), 2, async ([a, b]) => {
      await a!.rememberShareUid("public", "digest-1", "alice", T0);
      expect(await b!.findShareUid("public", "digest-1", T0 - DAY)).toBe("alice");
      await a!.saveResponse(response({ id: "resp_1" }));
      expect(await b!.getResponse("support", "resp_1", T0)).toEqual(response({ id: "resp_1" }));
      expect(await b!.deleteResponse("support", "resp_1", T0)).toBe(true);
      expect(await a!.getResponse("support", "resp_1", T0)).toBeUndefined();
    });
  });
});

describe("a database of schema version 1", () => {
  it("is upgraded with nothing lost: chats, rounds, variables, usage, spend and keys read back; app-key chats stay any key's", async () => {
    const url = await postgres.createDatabase();
    // as the previous build made and wrote it
    await withClient(url, async (client) => {
      await client.query(PG_MIGRATIONS[0]!);
      await client.query("CREATE TABLE sluice_schema (version integer NOT NULL); INSERT INTO sluice_schema VALUES (1)");
      await client.query(`INSERT INTO chats (app_id, chat_id, share_id, uid, title, created_at, updated_at, rounds, variables) VALUES
        ('support', 'by-key', NULL, NULL, 'key question', $1::bigint, $1::bigint + 2, 3, '{"lang":"en"}'),
        ('support', 'by-alice', 'public', 'alice', 'her question', $1::bigint, $1::bigint + 5, 1, NULL)`, [T0]);
      await client.query(`INSERT INTO rounds (app_id, chat_id, seq, user_turn, assistant_turn, created_at) VALUES
        ('support', 'by-key', 1, 'k0', 'ka0', $1::bigint), ('support', 'by-key', 2, 'k1', 'ka1', $1::bigint + 1), ('support', 'by-key', 3, 'k2', 'ka2', $1::bigint + 2),
        ('support', 'by-alice', 1, 'her question', 'her answer', $1::bigint + 5)`, [T0]);
      await client.query(`INSERT INTO usage (time, app_id, key_name, share_id, model, channel, input_tokens, output_tokens, points, status, duration_ms, chat_id)
        VALUES ($1, 'support', 'web', NULL, 'glm', 'local', 10, 5, 1.5, 200, 30, 'by-key')`, [T0]);
      await client.query(`INSERT INTO spend (scope, points) VALUES ('app:support', 1.5)`);
      await client.query(`INSERT INTO api_keys (name, kind, app_id, sha256, max_usage_points, qpm, created_at) VALUES ('ops', 'app', 'support', 'digest-of-ops', -1, 0, $1)`, [T0]);
      await client.query(`INSERT INTO key_activity (name, last_used_at) VALUES ('web', $1)`, [T0 + 9]);
    });

    await withStores(url, 1, async ([store]) => {
      const upgraded = store!;
      await expectUpgradedRecords(upgraded);
      expect((await history(upgraded, "support", "by-key")).map((m) => m.content)).toEqual(["k0", "ka0", "k1", "ka1", "k2", "ka2", "k3", "re: k3"]);
      await upgraded.recordUsage(usage({ finishReason: "length" }), []);
      expect((await upgraded.summarizeUsage({ groupBy: "finishReason" })).finishReasons?.map((r) => r.finishReason)).toEqual([null, "length"]);
    });
    expect(await withClient(url, (client) => client.query("SELECT version FROM sluice_schema")).then((r) => r.rows)).toEqual([{ version: PG_MIGRATIONS.length }]);
  });
});
