// The real entry (src/main.ts under tsx) as a child process: every answered turn and usage row survives
// `kill -9` mid-load; a bad config stops start-up listing every problem; SIGTERM exits 0.
import { writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSqliteStore } from "../src/store/sqlite.js";
import type { UsageSummary } from "../src/store/types.js";
import { GLOBAL_KEY, gatewayConfig, postChat, useTempDir, user } from "./support/fixtures.js";
import { SOURCE_ENTRY, createMainProcesses, type MainProcess } from "./support/main-process.js";
import { history } from "./support/store-rows.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ANSWER = "durable answer";
const LOAD_REQUESTS = 200;
const LOAD_CONCURRENCY = 8;
const KILL_AFTER_RESPONSES = 100;
// the request log off: the child's stdout carries only its start-up lines
const QUIET = { server: { log: { level: "warn" } } };

type Child = MainProcess;

let upstream: Upstream;
const tmp = useTempDir("sluice-durability-");
const processes = createMainProcesses();

beforeAll(async () => {
  upstream = await startUpstream({ text: ANSWER, firstByteDelayMs: 2 });
});
afterEach(async () => {
  // a failed test must not leave a gateway running: kill only the children this file started
  await processes.killAll();
  upstream.reset();
});
afterAll(() => upstream.close());

function writeConfig(name: string, raw: unknown): string {
  const path = tmp.file(name);
  writeFileSync(path, JSON.stringify(raw, null, 2));
  return path;
}

const spawnMain = (configPath: string) => processes.spawnMain(SOURCE_ENTRY, ["--config", configPath]);
const startMain = (configPath: string) => processes.startMain(SOURCE_ENTRY, ["--config", configPath]);

async function getUsage(url: string): Promise<UsageSummary> {
  const res = await fetch(`${url}/api/v1/usage`, { headers: { authorization: `Bearer ${GLOBAL_KEY}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as UsageSummary;
}

/**
 * `LOAD_REQUESTS` chats, each with its own chatId, `LOAD_CONCURRENCY` at a time; `kill -9` the child
 * once `KILL_AFTER_RESPONSES` responses arrived. Returns the indexes whose request got a 200.
 */
async function loadAndKill(child: Child): Promise<number[]> {
  const answered: number[] = [];
  let next = 0;
  let responses = 0;
  let killed = false;
  async function worker(): Promise<void> {
    while (!killed && next < LOAD_REQUESTS) {
      const i = next++;
      try {
        const res = await postChat(child.url, { chatId: `load-${i}`, messages: [user(`question ${i}`)] });
        const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
        if (res.status === 200 && body.choices?.[0]?.message.content === ANSWER) answered.push(i);
      } catch {
        continue; // the connection died with the process: this request is not counted as answered
      }
      if (++responses === KILL_AFTER_RESPONSES) {
        killed = true;
        child.proc.kill("SIGKILL");
      }
    }
  }
  await Promise.all(Array.from({ length: LOAD_CONCURRENCY }, worker));
  return answered;
}

describe("durability of the SQLite store", () => {
  it("keeps every answered turn and its usage row after kill -9 in the middle of the load", { timeout: 90_000 }, async () => {
    const dbPath = tmp.file("kill.db");
    const configPath = writeConfig(
      "kill.json",
      gatewayConfig(upstream.url, { sqlitePath: dbPath, extra: QUIET }),
    );

    // 1. Load, and kill -9 halfway.
    const first = await startMain(configPath);
    const answered = await loadAndKill(first);
    expect(await first.exited).toBe("SIGKILL");
    expect(answered.length).toBeGreaterThanOrEqual(KILL_AFTER_RESPONSES);
    expect(answered.length).toBeLessThan(LOAD_REQUESTS);

    // 2. The database opens again: a new process starts on it, reports the usage and serves chats.
    const second = await startMain(configPath);
    const usage = await getUsage(second.url);
    expect(usage.totals.requests).toBeGreaterThanOrEqual(answered.length);
    const res = await postChat(second.url, { chatId: "load-0", messages: [user("after the crash")] });
    expect(res.status).toBe(200);
    second.proc.kill("SIGTERM");
    expect(await second.exited).toBe(0);

    // 3. Every answered turn and the usage row of every answered request are in the file.
    const store = createSqliteStore(dbPath);
    try {
      for (const i of answered) {
        const stored = (await history(store, "a1", `load-${i}`, 100)).slice(0, 2);
        expect(stored.map((m) => [m.role, m.content])).toEqual([
          ["user", `question ${i}`],
          ["assistant", ANSWER],
        ]);
      }
    } finally {
      await store.close();
    }
    const db = new Database(dbPath, { readonly: true });
    try {
      const rows = db.prepare("SELECT chat_id FROM usage WHERE status = 200").all() as Array<{ chat_id: string }>;
      const withUsage = new Set(rows.map((r) => r.chat_id));
      expect(answered.filter((i) => !withUsage.has(`load-${i}`))).toEqual([]);
    } finally {
      db.close();
    }
  });
});

describe("start-up and shutdown of src/main.ts", () => {
  it("exits non-zero on a bad config file, listing every problem by its path in its log", { timeout: 30_000 }, async () => {
    const raw = gatewayConfig(upstream.url) as { llmModels: Array<Record<string, unknown>>; apps: Array<Record<string, unknown>> };
    raw.llmModels[0]!.maxContext = "big";
    raw.apps[1]!.history = -1;
    const child = await spawnMain(writeConfig("bad.json", raw));
    const code = await child.exited;
    expect(typeof code === "number" && code !== 0, `exit ${code}`).toBe(true);
    expect(child.stdout()).toContain("llmModels[0].maxContext");
    expect(child.stdout()).toContain("apps[1].history");
    expect(child.stdout()).not.toMatch(/listening on/);
  });

  it("on SIGTERM finishes the request in flight, then exits 0", { timeout: 30_000 }, async () => {
    const configPath = writeConfig("term.json", gatewayConfig(upstream.url, { sqlitePath: tmp.file("term.db"), extra: QUIET }));
    const child = await startMain(configPath);
    upstream.behave({ firstByteDelayMs: 300 });
    const pending = postChat(child.url, { messages: [user("answer me before you go")] });
    await upstream.waitForRequests(1);
    child.proc.kill("SIGTERM");
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ choices: [{ message: { content: ANSWER } }] });
    expect(await child.exited).toBe(0);
  });
});
