// Files the gateway creates hold chats, usage and log lines: only its own user may read them. The
// SQLite database (and its -wal, -shm and .lock files) and a log file are created 0600, a folder the
// gateway makes for them 0700, whatever the process's umask allows; files that already exist keep
// the mode their owner gave them.
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/observability/logger.js";
import { openStore } from "../src/store/index.js";

let dir = "";
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "sluice-modes-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe("files the gateway creates", () => {
  it("the SQLite store: the database, its -wal, -shm and lock files 0600, the folders made for them 0700", async () => {
    const path = join(dir, "data", "nested", "sluice.db");
    const store = await openStore({ driver: "sqlite", path });
    try {
      await store.appendRound({ appId: "a", chatId: "c", owner: { keyName: "k" }, user: "q", assistant: "a", at: Date.now() });
      for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}.lock`]) expect([file, modeOf(file)]).toEqual([file, "600"]);
      expect(modeOf(join(dir, "data"))).toBe("700");
      expect(modeOf(join(dir, "data", "nested"))).toBe("700");
    } finally {
      await store.close();
    }
  });

  it("an existing database keeps its mode", async () => {
    const path = join(dir, "own.db");
    writeFileSync(path, "");
    chmodSync(path, 0o640);
    const store = await openStore({ driver: "sqlite", path });
    await store.close();
    expect(modeOf(path)).toBe("640");
  });

  it("a log file 0600, in a folder made 0700", async () => {
    const path = join(dir, "logs", "sluice.log");
    const log = createLogger({ level: "info", destination: path });
    log.info("hello");
    await log.close();
    expect(modeOf(path)).toBe("600");
    expect(modeOf(join(dir, "logs"))).toBe("700");

    const pretty = join(dir, "logs", "pretty.log");
    const human = createLogger({ level: "info", destination: pretty, pretty: true });
    human.info("hello");
    await human.close();
    expect(modeOf(pretty)).toBe("600");
  });
});
