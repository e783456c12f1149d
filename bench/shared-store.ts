// PostgreSQL and Redis for `--store postgres`, started as the tests start them (test/support/): a
// throwaway PostgreSQL from initdb in a temp dir, as the `postgres` user when the bench runs as
// root, but with PostgreSQL's durable defaults (fsync, full-page writes, synchronous commit: each
// commit waits for its WAL flush), and a throwaway redis-server (no AOF, no snapshots). Each Sluice
// gets a database and a Redis of its own, so that no instance sees another's rows or counters.
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import pg from "pg";
import { startPostgres, type PostgresServer } from "../test/support/postgres.js";
import { startRedis, type RedisServer } from "../test/support/redis.js";
import { childProcesses, parentPid } from "./process-cpu.js";
import { startSluice, type SluiceProcess } from "./sluice-process.js";

export interface SharedStore {
  postgres: PostgresServer;
  /** the postmaster: its children are the backends (one per connection) and the WAL writer etc. */
  postmasterPid: number;
  /** what the run measured against, e.g. "PostgreSQL 15.14: fsync on, synchronous_commit on, …" */
  description: string;
  close(): Promise<void>;
}

export interface SharedSluice extends SluiceProcess {
  /** the processes of its store, for CPU per request: PostgreSQL's whole tree and its Redis */
  storePids: Record<string, number>;
}

export async function startSharedStore(): Promise<SharedStore> {
  const postgres = await startPostgres({ durable: true });
  try {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      const setting = async (name: string) => (await client.query<{ v: string }>(`SELECT current_setting('${name}') AS v`)).rows[0]!.v;
      const backend = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      const settings: string[] = [];
      for (const name of ["fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "shared_buffers"]) settings.push(`${name} ${await setting(name)}`);
      const description = `PostgreSQL ${await setting("server_version")}: ${settings.join(", ")} (the defaults)`;
      return { postgres, postmasterPid: await parentPid(backend), description, close: () => postgres.close() };
    } finally {
      await client.end();
    }
  } catch (err) {
    await postgres.close();
    throw err;
  }
}

/** A Sluice on a fresh database of `store` and a fresh Redis; stopping it stops that Redis too. */
export async function startSharedSluice(upstreamUrl: string, store: SharedStore, workers: number, nodeArgs?: string[]): Promise<SharedSluice> {
  const redis = await startRedis();
  try {
    const redisPid = await redisServerPid(redis);
    const postgresUrl = await store.postgres.createDatabase(`bench_${workers}w_${Date.now()}`);
    const sluice = await startSluice(upstreamUrl, { shared: { postgresUrl, redisUrl: redis.url }, workers, nodeArgs });
    return {
      ...sluice,
      storePids: { PostgreSQL: store.postmasterPid, Redis: redisPid },
      stop: () => sluice.stop().finally(() => redis.close()),
    };
  } catch (err) {
    await redis.close();
    throw err;
  }
}

async function redisServerPid(server: RedisServer): Promise<number> {
  const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const info = await client.info("server");
    const pid = /^process_id:(\d+)/m.exec(info)?.[1];
    if (!pid) throw new Error("redis-server's INFO named no process_id");
    return Number(pid);
  } finally {
    client.disconnect();
  }
}

const WORKERS_FORK_TIMEOUT_MS = 10_000;

/** How many worker processes the primary `pid` has forked, once it has `wanted` or after a while:
 *  the primary answers /healthz through its first worker, perhaps before the others are up. */
export async function forkedWorkers(pid: number, wanted: number): Promise<number> {
  const deadline = Date.now() + WORKERS_FORK_TIMEOUT_MS;
  for (;;) {
    const count = (await childProcesses(pid)).length;
    if (count >= wanted || Date.now() > deadline) return count;
    await sleep(100);
  }
}
