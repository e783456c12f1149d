// A throwaway redis-server for one test file: a free loopback port, its own temp dir, no snapshots
// and no AOF (nothing here must outlive the test). stop() kills it (as a crash would) and start()
// brings it back, empty, on the same port, for fault tests; close() stops it and removes the dir.
// Each user of it takes a fresh key prefix from prefix(), so tests never see each other's keys.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { freePort } from "./main-process.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

const REDIS_SERVER = "/usr/bin/redis-server";
const READY_LINE = /Ready to accept connections/;

export interface RedisServer {
  url: string;
  port: number;
  /** Kills the server (as a crash would); resolves once it exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty); resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its dir. */
  close(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-redis-"));
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
  let server: ServerProcess | undefined;
  const start = async () => void (server = await startServerProcess(REDIS_SERVER, args, READY_LINE, { cwd: dir }));
  async function stop(): Promise<void> {
    const running = server;
    server = undefined;
    await running?.stop("SIGKILL");
  }

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    start,
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One server for the calling test file: started before its tests, removed after them. */
export function useRedis(): { server(): RedisServer; prefix(): string } {
  let server: RedisServer | undefined;
  let prefixes = 0;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server?.close());
  const started = () => server ?? (() => { throw new Error("useRedis: the server starts in beforeAll"); })();
  return { server: started, prefix: () => `t${++prefixes}:` };
}
