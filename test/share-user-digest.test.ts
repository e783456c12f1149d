// A share-link user without `authHost` is known by the browser's localId, which is also what opens
// their chats (/api/share/chats, /api/share/chat): usage rows keep only its digest
// (docs/store.md#share-link-users-in-usage-rows). Chats over a real gateway and operator server: the
// usage report (JSON and CSV), the AI Proxy call logs, /metrics and the usage rows in the SQLite file
// never show the localId, the digest groups one user's rows and opens nothing, and an operator's uid
// is kept; rows stored before, with the raw localId, are rewritten at the upgrade — in a SQLite file
// and in a PostgreSQL database.
import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../src/store/migrations.js";
import { PG_MIGRATIONS } from "../src/store/postgres-migrations.js";
import { GLOBAL_KEY, gatewayConfig, postChat, useTempDir, user } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";
import { usePostgres } from "./support/postgres.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-test-admin-key-36";
const LOCAL_ID = "browser-local-id-4f9c2a7e1b";
const OTHER_ID = "browser-local-id-0d3e5b8c6a";
const OP_TOKEN = "operator-token-36";
/** hashed as UTF-8 by the gateway and by both migrations alike */
const UNICODE_ID = "visiteur-é-漢字-🦊";
/** the schema versions written before the digest: the files and databases of the previous build */
const SQLITE_BEFORE = 11;
const PG_BEFORE = 7;

/** docs/store.md#share-link-users-in-usage-rows, worked out here apart from the gateway's code. */
const digest = (shareId: string, uid: string) => `sha256:${createHash("sha256").update(`sluice share user|${shareId}|${uid}`).digest("hex").slice(0, 32)}`;

type Group = { share: string | null; user: string | null; requests: number };

/** As the report orders its groups: by share, then user, null first. */
function sorted(groups: Group[]): Group[] {
  const order = (g: Group) => [g.share, g.user].map((v) => (v === null ? "0" : `1${v}`)).join("\n");
  return groups.sort((a, b) => (order(a) < order(b) ? -1 : 1));
}

let upstream: Upstream;
beforeAll(async () => {
  upstream = await startUpstream({ usage: { prompt_tokens: 5, completion_tokens: 3 } });
});
afterAll(() => upstream.close());

const get = (gw: StartedGateway, path: string, key = GLOBAL_KEY) => fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });

async function groups(gw: StartedGateway): Promise<Group[]> {
  const res = await get(gw, "/api/v1/usage?groupBy=share,user");
  expect(res.status).toBe(200);
  return ((await res.json()) as { groups: Group[] }).groups.map(({ share, user, requests }) => ({ share, user, requests }));
}

describe("share-link users in new usage rows", () => {
  const temp = useTempDir("sluice-share-user-");
  let op: OperatorServer;
  let gw: StartedGateway;
  let dbPath: string;

  beforeAll(async () => {
    op = await startOperatorServer();
    op.setMode(OP_TOKEN, { kind: "success", uid: "op-alice" });
    dbPath = temp.file("usage.db");
    const config = gatewayConfig(upstream.url, {
      sqlitePath: dbPath,
      extra: { shareLinks: [{ shareId: "pub", appId: "a1", apiQpm: 0 }, { shareId: "op", appId: "a1", authHost: op.url, apiQpm: 0 }] },
    });
    (config.apiKeys as unknown[]).push({ name: "fastgpt", kind: "admin", key: ADMIN_KEY });
    gw = await startGateway(config);
    const asks: Array<[string, string, string]> = [["pub", LOCAL_ID, "c1"], ["pub", LOCAL_ID, "c1"], ["pub", OTHER_ID, "c2"], ["op", OP_TOKEN, "c3"]];
    for (const [shareId, outLinkUid, chatId] of asks) {
      const res = await postChat(gw.url, { shareId, outLinkUid, chatId, messages: [user("hello")] }, null);
      expect(res.status, await res.clone().text()).toBe(200);
      await res.arrayBuffer();
    }
  });
  afterAll(async () => {
    await gw.close();
    await op.close();
  });

  it("reports a localId as its digest, one group per user; an operator's uid as given", async () => {
    // before (the starting commit): [{pub, "browser-local-id-0d3e5b8c6a", 1}, {pub, "browser-local-id-4f9c2a7e1b", 2}, …]
    expect(await groups(gw)).toEqual(
      sorted([
        { share: "op", user: "op-alice", requests: 1 },
        { share: "pub", user: digest("pub", LOCAL_ID), requests: 2 },
        { share: "pub", user: digest("pub", OTHER_ID), requests: 1 },
      ]),
    );
  });

  it("shows the localId nowhere: report (JSON, CSV), call logs, metrics, the usage rows", async () => {
    const texts = await Promise.all([
      get(gw, "/api/v1/usage?groupBy=share,user,key").then((r) => r.text()),
      get(gw, "/api/v1/usage?groupBy=user&format=csv").then((r) => r.text()),
      get(gw, "/api/logs/search?per_page=100", ADMIN_KEY).then((r) => r.text()),
      get(gw, "/metrics").then((r) => r.text()),
    ]);
    const db = new Database(dbPath, { readonly: true });
    const rows = db.prepare("SELECT * FROM usage").all();
    db.close();
    expect(rows).toHaveLength(4);
    for (const text of [...texts, JSON.stringify(rows)]) {
      expect(text).not.toContain(LOCAL_ID);
      expect(text).not.toContain(OTHER_ID);
    }
    expect(JSON.parse(texts[2]!)).toMatchObject({ success: true, data: { total: 4 } });
  });

  it("the reported name opens nobody's chats; the localId itself does", async () => {
    const chats = async (outLinkUid: string) => {
      const res = await fetch(`${gw.url}/api/share/chats`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ shareId: "pub", outLinkUid }) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { chats: Array<{ chatId: string }> }).chats.map((c) => c.chatId);
    };
    const reported = (await groups(gw)).find((g) => g.share === "pub" && g.requests === 2)!.user!;
    // before: the reported name was the localId, and it listed ["c1"]
    expect(await chats(reported)).toEqual([]);
    expect(await chats(LOCAL_ID)).toEqual(["c1"]);
  });
});

/** The rows an older build wrote: a share-link user twice and once without a user, an app key's end user. */
const OLD_ROWS: Array<[string | null, string | null, string | null]> = [
  [null, "pub", LOCAL_ID],
  [null, "pub", LOCAL_ID],
  [null, "pub", null],
  [null, "pub", UNICODE_ID],
  ["k1", null, "ann"],
];
const UPGRADED: Group[] = sorted([
  { share: null, user: "ann", requests: 1 },
  { share: "pub", user: null, requests: 1 },
  { share: "pub", user: digest("pub", LOCAL_ID), requests: 2 },
  { share: "pub", user: digest("pub", UNICODE_ID), requests: 1 },
]);
const INSERT_OLD = `INSERT INTO usage (time, app_id, key_name, share_id, model, channel, input_tokens, output_tokens, points, status, duration_ms, "user")
  VALUES ($1, 'a1', $2, $3, 'm1', 'up', 5, 3, 0.016, 200, 20, $4)`;

const shareConfig = (extra: Record<string, unknown>) =>
  gatewayConfig(upstream.url, { extra: { shareLinks: [{ shareId: "pub", appId: "a1", apiQpm: 0 }], ...extra } });

describe("usage rows stored before, upgraded", () => {
  const temp = useTempDir("sluice-share-user-upgrade-");

  it("SQLite: a file of the previous schema has each share-link user rewritten as its digest", async () => {
    const path = temp.file("old.db");
    const old = new Database(path);
    for (const step of MIGRATIONS.slice(0, SQLITE_BEFORE)) old.exec(step);
    old.pragma(`user_version = ${SQLITE_BEFORE}`);
    const insert = old.prepare(INSERT_OLD.replace(/\$\d/g, "?"));
    OLD_ROWS.forEach(([key, share, who], i) => insert.run(Date.now() - 1000 + i, key, share, who));
    old.close();

    const gw = await startGateway(shareConfig({ store: { driver: "sqlite", path } }));
    try {
      // before: {pub, "browser-local-id-4f9c2a7e1b", 2} — the old rows kept the localId
      expect(await groups(gw)).toEqual(UPGRADED);
    } finally {
      await gw.close();
    }
    const check = new Database(path, { readonly: true });
    const stored = JSON.stringify(check.prepare("SELECT * FROM usage").all());
    expect(stored).not.toContain(LOCAL_ID);
    expect(stored).not.toContain(UNICODE_ID);
    check.close();
  });

  describe("PostgreSQL", () => {
    const postgres = usePostgres();

    it("a database of the previous schema has each share-link user rewritten as its digest", async () => {
      const url = await postgres.createDatabase();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        for (const step of PG_MIGRATIONS.slice(0, PG_BEFORE)) await client.query(step);
        await client.query("CREATE TABLE sluice_schema (version integer NOT NULL)");
        await client.query("INSERT INTO sluice_schema (version) VALUES ($1)", [PG_BEFORE]);
        for (const [i, [key, share, who]] of OLD_ROWS.entries()) await client.query(INSERT_OLD, [Date.now() - 1000 + i, key, share, who]);
      } finally {
        await client.end();
      }

      const gw = await startGateway(shareConfig({ store: { driver: "postgres", url } }));
      try {
        // before: {pub, "browser-local-id-4f9c2a7e1b", 2} — the old rows kept the localId
        expect(await groups(gw)).toEqual(UPGRADED);
        // a chat after the upgrade joins the rewritten rows' group
        const res = await postChat(gw.url, { shareId: "pub", outLinkUid: LOCAL_ID, chatId: "c9", messages: [user("again")] }, null);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        expect((await groups(gw)).find((g) => g.user === digest("pub", LOCAL_ID))?.requests).toBe(3);
      } finally {
        await gw.close();
      }
      const check = new pg.Client({ connectionString: url });
      await check.connect();
      try {
        const stored = JSON.stringify((await check.query(`SELECT * FROM usage`)).rows);
        expect(stored).not.toContain(LOCAL_ID);
        expect(stored).not.toContain(UNICODE_ID);
      } finally {
        await check.end();
      }
    });
  });
});
