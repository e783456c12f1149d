// A throwaway PostgreSQL server for one test file: `initdb` in a temp dir, `postgres` on a free
// loopback port with its socket in that dir (fsync off: nothing here must survive the machine; the
// bench asks for `durable`, PostgreSQL's default fsync and full-page writes, to measure what users get),
// run as the `postgres` OS user when the tests run as root (initdb and postgres refuse root).
// stop() and start() take it down and bring it back on the same port, for fault tests; close()
// stops it and removes the dir. Each test gets a database of its own from createDatabase().
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { freePort } from "./main-process.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

const PG_ROOT = "/usr/lib/postgresql";
const READY_LINE = /database system is ready to accept connections/;

export interface PostgresServer {
  /** postgres://… of the `postgres` database (superuser, trust auth on loopback) */
  url: string;
  port: number;
  /** Creates an empty database; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Fast shutdown: clients are disconnected, new connections refused. Resolves once it exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data dir; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Freezes the server and every connection's process (SIGSTOP): a server that stopped answering. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT). */
  resume(): void;
  /** Stops it and removes its files. */
  close(): Promise<void>;
}

/** The bin dir of the newest PostgreSQL installed under /usr/lib/postgresql (Debian's layout). */
export function postgresBinDir(): string {
  const versions = existsSync(PG_ROOT) ? readdirSync(PG_ROOT).filter((v) => existsSync(join(PG_ROOT, v, "bin", "initdb"))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`no PostgreSQL under ${PG_ROOT}: install it with apt-get install postgresql (npm test does, as root)`);
  return join(PG_ROOT, newest, "bin");
}

/** uid/gid to run the server as: the `postgres` user when we are root, else ourselves. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"));
  if (!line) throw new Error("the tests run as root, and there is no `postgres` user to run PostgreSQL as");
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

export async function startPostgres(opts: { durable?: boolean } = {}): Promise<PostgresServer> {
  const bin = postgresBinDir();
  const user = serverUser();
  const dir = await mkdtemp(join(tmpdir(), "sluice-pg-"));
  const data = join(dir, "data");
  if (user) chownSync(dir, user.uid, user.gid);
  execFileSync(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"], {
    ...user,
    cwd: dir,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let server: ServerProcess | undefined;
  let databases = 0;

  async function start(): Promise<void> {
    const settings = ["listen_addresses=127.0.0.1", `port=${port}`, `unix_socket_directories=${dir}`, ...(opts.durable ? [] : ["fsync=off", "full_page_writes=off"])];
    server = await startServerProcess(join(bin, "postgres"), ["-D", data, ...settings.flatMap((s) => ["-c", s])], READY_LINE, { ...user, cwd: dir });
  }

  async function stop(): Promise<void> {
    const running = server;
    server = undefined;
    await running?.stop("SIGINT"); // fast shutdown: clients are told and disconnected
  }

  /** the postmaster and its children (one process per connection), found through /proc */
  function processes(): number[] {
    if (!server) return [];
    const parent = server.pid;
    const children = readdirSync("/proc").filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        // "pid (comm) state ppid …": comm may hold spaces, so read after its closing parenthesis
        const stat = readFileSync(`/proc/${p}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === parent;
      } catch {
        return false; // it ended meanwhile
      }
    });
    return [parent, ...children.map(Number)];
  }
  function signalAll(signal: NodeJS.Signals): void {
    for (const pid of processes()) {
      try {
        process.kill(pid, signal);
      } catch {
        // it ended since it was listed
      }
    }
  }

  // a worker that ends without its afterAll (a crash, a timeout) leaves no server behind
  const onExit = () => {
    signalAll("SIGCONT");
    if (server) process.kill(server.pid, "SIGQUIT");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", onExit);

  await start();
  return {
    url,
    port,
    async createDatabase(name = `t${process.pid}_${++databases}`) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    stop,
    start,
    pause: () => signalAll("SIGSTOP"),
    resume: () => signalAll("SIGCONT"),
    async close() {
      process.off("exit", onExit);
      signalAll("SIGCONT");
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One server for the calling test file: started before its tests, removed after them. */
export function usePostgres(): { server(): PostgresServer; createDatabase(): Promise<string> } {
  let server: PostgresServer | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(() => server?.close());
  const started = () => server ?? (() => { throw new Error("usePostgres: the server starts in beforeAll"); })();
  return { server: started, createDatabase: () => started().createDatabase() };
}
