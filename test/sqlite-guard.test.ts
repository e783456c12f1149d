// SQLite is for one process (docs/store.md#sqlite): a second gateway on the same file refuses to start and
// names the postgres store; the lock of a process killed with -9 does not block a restart.
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createStore } from "../src/store/index.js";
import { SqliteInUseError } from "../src/store/sqlite-guard.js";
import { gatewayConfig, postChat, useTempDir, user } from "./support/fixtures.js";
import { SOURCE_ENTRY, createMainProcesses } from "./support/main-process.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const tmp = useTempDir("sluice-guard-");
const processes = createMainProcesses();
let upstream: Upstream;

beforeAll(async () => {
  upstream = await startUpstream({ text: "guarded" });
});
afterEach(() => processes.killAll());
afterAll(() => upstream.close());

describe("the SQLite store's one-process guard", () => {
  it("refuses a second store on the same file in this process until the first is closed", async () => {
    const path = tmp.file("in-process.db");
    const first = createStore({ driver: "sqlite", path });
    expect(() => createStore({ driver: "sqlite", path })).toThrow(SqliteInUseError);
    const other = createStore({ driver: "sqlite", path: tmp.file("other.db") });
    await other.close();
    await first.close();
    const again = createStore({ driver: "sqlite", path });
    await again.ping();
    await again.close();
  });

  it("refuses a second gateway process on the file, naming the postgres store; a kill -9 leaves no stale lock", { timeout: 60_000 }, async () => {
    const configPath = tmp.file("guard.json");
    writeFileSync(configPath, JSON.stringify(gatewayConfig(upstream.url, { sqlitePath: tmp.file("shared.db"), extra: { server: { log: { level: "warn" } } } })));
    const start = () => processes.startMain(SOURCE_ENTRY, ["--config", configPath]);

    // 1. The first process serves; a second on the same file exits at once, saying why.
    const first = await start();
    expect((await postChat(first.url, { chatId: "kept", messages: [user("before")] })).status).toBe(200);
    const second = await processes.spawnMain(SOURCE_ENTRY, ["--config", configPath]);
    const outputRead = once(second.proc, "close");
    expect(await second.exited).toBe(1);
    await outputRead;
    const said = second.stdout() + second.stderr();
    expect(said).toMatch(/another process is using the SQLite store .*shared\.db/);
    expect(said).toMatch(/use the postgres store/);
    expect(said).not.toMatch(/listening on/);
    expect((await postChat(first.url, { chatId: "kept", messages: [user("still here")] })).status).toBe(200);

    // 2. kill -9 of the first: a new process starts on the file and has its chats.
    first.proc.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    const third = await start();
    const res = await postChat(third.url, { chatId: "kept", messages: [user("after")] });
    expect(res.status).toBe(200);
    expect(upstream.last().body.messages).toHaveLength(5);
  });
});
