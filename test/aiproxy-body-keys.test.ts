// Kept bodies are keyed by an id Sluice makes, never by the client's x-request-id
// (docs/fastgpt.md#bodies): calls that share one id — and the same arrival millisecond — each show
// their own bodies in FastGPT's log detail, on SQLite and on PostgreSQL, and bodies kept before the
// change are still shown by their usage row (and refused where their request id was shared).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defineMigrationFunctions, MIGRATIONS } from "../src/store/migrations.js";
import { PG_MIGRATIONS } from "../src/store/postgres-migrations.js";
import { createStore } from "../src/store/index.js";
import type { Store } from "../src/store/types.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { usePostgres } from "./support/postgres.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-body-keys-admin-0001";
const KEYS = ["sk-body-keys-caller-0000", "sk-body-keys-caller-0001", "sk-body-keys-caller-0002"];
const SHARED_ID = "one-id-for-every-call";
const CALLS = 30;

const postgres = usePostgres();
let upstream: Upstream;
let dir: string;
beforeAll(async () => {
  upstream = await startUpstream();
  dir = mkdtempSync(join(tmpdir(), "sluice-body-keys-"));
});
afterAll(async () => {
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A gateway whose app keeps every call's bodies, three keys of it, and a clock that stands still:
 *  every call arrives in the same millisecond. */
function startKeeping(store: Store | undefined, time: number): Promise<StartedGateway> {
  const config = coreConfig(upstream.url) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>>; apps: Array<Record<string, unknown>> };
  config.apiKeys.push({ name: "fastgpt", kind: "admin", key: ADMIN_KEY }, ...KEYS.map((key, i) => ({ name: `k${i}`, kind: "app", appId: "a1", key })));
  for (const c of config.channels) c.healthCheck = { intervalMs: 0 };
  config.apps[0]!.logBodies = "all";
  return startGateway({ ...config, routing: { maxAttempts: 1 } }, { store, clock: () => time });
}

async function admin<T>(g: StartedGateway, path: string): Promise<{ status: number; data: T }> {
  const res = await fetch(g.url + path, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  return { status: res.status, ...((await res.json()) as { data: T }) };
}

interface Log {
  id: number;
  request_id: string;
  token_name: string;
}

/** CALLS calls at once, all with one x-request-id; then each log's detail: whose bodies it shows. */
async function sharedIdDetails(g: StartedGateway): Promise<Array<{ log: Log; request: string }>> {
  const answers = await Promise.all(
    Array.from({ length: CALLS }, async (_, i) => {
      const res = await fetch(`${g.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEYS[i % KEYS.length]}`, "x-request-id": SHARED_ID },
        body: JSON.stringify({ model: "m1", messages: [userMessage(`call-${i} by k${i % KEYS.length}`)] }),
      });
      await res.text();
      return res;
    }),
  );
  for (const res of answers) expect([res.status, res.headers.get("x-request-id")]).toEqual([200, SHARED_ID]);
  let logs: Log[] = [];
  await vi.waitFor(async () => {
    logs = (await admin<{ logs: Log[] }>(g, `/api/logs/search?request_id=${SHARED_ID}&per_page=100`)).data.logs;
    expect(logs).toHaveLength(CALLS);
  });
  return Promise.all(
    logs.map(async (log) => {
      let request = "";
      await vi.waitFor(async () => {
        const detail = await admin<{ request_body: string }>(g, `/api/logs/detail/${log.id}`);
        expect(detail.status).toBe(200);
        request = detail.data.request_body;
      });
      return { log, request };
    }),
  );
}

function expectOwnBodies(details: Array<{ log: Log; request: string }>): void {
  // the client's id stays the log's, searchable; each detail is its own call's, by its own key
  // (before: every one of the 30 details showed the same call's bodies, 20 of 30 another key's)
  expect(details.map(({ log }) => log.request_id)).toEqual(Array(CALLS).fill(SHARED_ID));
  const calls = details.map(({ log, request }) => ({ key: log.token_name, call: /call-(\d+) by (k\d)/.exec(request) }));
  expect(calls.filter(({ key, call }) => call?.[2] !== key).length, "details showing another key's bodies").toBe(0);
  expect(new Set(calls.map(({ call }) => call?.[1])).size, "calls whose bodies are shown").toBe(CALLS);
}

describe("bodies of calls sharing one x-request-id", () => {
  it("shows each call its own bodies on SQLite", async () => {
    const g = await startKeeping(undefined, Date.now());
    try {
      expectOwnBodies(await sharedIdDetails(g));
    } finally {
      await g.close();
    }
  });

  it("shows each call its own bodies on PostgreSQL", async () => {
    const store = createStore({ driver: "postgres", url: await postgres.createDatabase() });
    const g = await startKeeping(store, Date.now());
    try {
      expectOwnBodies(await sharedIdDetails(g));
    } finally {
      await g.close();
      await store.close();
    }
  });
});

/** Bodies kept before bodies keys: three usage rows at one time, one alone with its request id
 *  ("alone"), two sharing theirs ("shared"), and a body of each id, as the schema of then had them. */
const T_OLD = Date.now() - 60_000;
const OLD_ROWS = ["alone", "shared", "shared"];
const oldRow = (requestId: string) => [T_OLD, "a1", "k0", null, "m1", "up", 1, 1, 0, 200, 5, null, "stop", requestId, "/v1/chat/completions", 1, 1, 5, null, 0, null];
const OLD_USAGE = `INSERT INTO usage (time, app_id, key_name, share_id, model, channel, input_tokens, output_tokens, points, status, duration_ms, chat_id, finish_reason,
  request_id, endpoint, channel_id, attempts, ttfb_ms, error, cached_tokens, "user")`;
const oldBodies = (requestId: string) => [requestId, T_OLD, `{"asked":"${requestId}"}`, `{"answered":"${requestId}"}`, false, false, Date.now() + 3_600_000];
const OLD_BODIES = "INSERT INTO usage_bodies (request_id, time, request, response, request_truncated, response_truncated, expires_at)";

/** What the log detail shows of each old row, through a gateway on the migrated store. */
async function oldDetails(store: Store): Promise<Array<{ status: number; request?: string }>> {
  const g = await startKeeping(store, Date.now());
  try {
    const { logs } = (await admin<{ logs: Log[] }>(g, `/api/logs/search?order=id-asc&start_timestamp=${T_OLD}`)).data;
    expect(logs.map((l) => l.request_id)).toEqual(OLD_ROWS);
    return await Promise.all(logs.map(async (l) => admin<{ request_body?: string }>(g, `/api/logs/detail/${l.id}`).then((d) => ({ status: d.status, request: d.data?.request_body }))));
  } finally {
    await g.close();
  }
}

// the one unambiguous old body is kept; the two that shared an id are no longer shown as each other's
// (before: no migration; both "shared" rows showed the one "shared" body)
/** The schema version just before bodies keys. */
const beforeKeys = (steps: readonly string[]) => steps.findIndex((step) => step.includes("bodies_key"));
const OLD_SEEN = [{ status: 200, request: '{"asked":"alone"}' }, { status: 404 }, { status: 404 }];

describe("bodies kept before bodies keys", () => {
  it("are still shown after the SQLite migration, where their request id was their row's alone", async () => {
    const path = join(dir, "old.db");
    const db = new Database(path);
    defineMigrationFunctions(db);
    db.exec(MIGRATIONS.slice(0, beforeKeys(MIGRATIONS)).join(";\n"));
    db.pragma(`user_version = ${beforeKeys(MIGRATIONS)}`);
    for (const id of OLD_ROWS) db.prepare(`${OLD_USAGE} VALUES (${Array(21).fill("?").join(", ")})`).run(oldRow(id));
    for (const id of new Set(OLD_ROWS)) db.prepare(`${OLD_BODIES} VALUES (?, ?, ?, ?, ?, ?, ?)`).run(oldBodies(id).map((v) => (typeof v === "boolean" ? Number(v) : v)));
    db.close();
    const store = createStore({ driver: "sqlite", path });
    try {
      expect(await oldDetails(store)).toEqual(OLD_SEEN);
    } finally {
      await store.close();
    }
  });

  it("are still shown after the PostgreSQL migration, where their request id was their row's alone", async () => {
    const url = await postgres.createDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      for (const step of PG_MIGRATIONS.slice(0, beforeKeys(PG_MIGRATIONS))) await client.query(step);
      await client.query("CREATE TABLE sluice_schema (version integer NOT NULL)");
      await client.query("INSERT INTO sluice_schema (version) VALUES ($1)", [beforeKeys(PG_MIGRATIONS)]);
      const params = (n: number) => Array.from({ length: n }, (_, i) => `$${i + 1}`).join(", ");
      for (const id of OLD_ROWS) await client.query(`${OLD_USAGE} VALUES (${params(21)})`, oldRow(id));
      for (const id of new Set(OLD_ROWS)) await client.query(`${OLD_BODIES} VALUES (${params(7)})`, oldBodies(id));
    } finally {
      await client.end();
    }
    const store = createStore({ driver: "postgres", url });
    try {
      expect(await oldDetails(store)).toEqual(OLD_SEEN);
    } finally {
      await store.close();
    }
  });
});
