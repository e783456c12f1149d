// server.workers (docs/operations.md#workers): the built entry as a node:cluster primary of two workers on a
// throwaway PostgreSQL and redis-server. Both workers serve (each request's log line names the worker
// that answered it), a conversation goes on across them, /metrics answers for the whole instance,
// SIGHUP reloads each worker once, a killed worker is replaced without the instance's counters going
// back, SIGTERM drains a stream in flight (exit 0, its usage row written); and a start that cannot
// work (SQLite, a store out of reach) ends with exit 1, saying why.
import { spawn, spawnSync } from "node:child_process";
import { request } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILT_ENTRY, REPO_ROOT, createMainProcesses, freePort, type MainProcess } from "./support/main-process.js";
import { usePostgres } from "./support/postgres.js";
import { useRedis } from "./support/redis.js";
import { parseSse, readUntil } from "./support/sse.js";
import { UPSTREAM_DEFAULTS, startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-workers-test-key";
const postgres = usePostgres();
const redis = useRedis();
const processes = createMainProcesses();
let upstream: Upstream;
let slowUpstream: Upstream;
let longUpstream: Upstream;
let dir = "";
/** started here, not through `processes`: npm, unshare, a process group of its own */
const others: MainProcess[] = [];
beforeAll(async () => {
  upstream = await startUpstream({ record: true });
  // about 2 s per stream: in flight when SIGTERM comes, within the grace
  slowUpstream = await startUpstream({ chunks: 8, chunkDelayMs: 250 });
  // 10 s: still in flight when a second signal comes
  longUpstream = await startUpstream({ chunks: 40, chunkDelayMs: 250 });
  dir = mkdtempSync(join(tmpdir(), "sluice-workers-"));
});
afterAll(async () => {
  await processes.killAll();
  for (const other of others) if (other.proc.exitCode === null && other.proc.signalCode === null) process.kill(-other.proc.pid!, "SIGKILL");
  await Promise.all(others.map((other) => other.exited));
  await Promise.all([upstream?.close(), slowUpstream?.close(), longUpstream?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, changes: { store?: unknown; cluster?: unknown; upstreamUrl?: string } = {}): string {
  const path = join(dir, name);
  const config = {
    server: { workers: 2, shutdownTimeoutMs: 10_000, log: { level: "info" } },
    store: changes.store,
    cluster: "cluster" in changes ? changes.cluster : { redisUrl: redis.server().url },
    channels: [{ name: "up", baseUrl: changes.upstreamUrl ?? upstream.url, key: "channel-key-workers", models: ["m"], healthCheck: { intervalMs: 0 } }],
    llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
    apps: [{ id: "app", model: "m", history: 6 }],
    apiKeys: [{ name: "k", kind: "app", appId: "app", key: KEY }],
  };
  writeFileSync(path, JSON.stringify(config));
  return path;
}

interface LogLine {
  msg: string;
  pid: number;
  worker?: number;
  requestId?: string;
  [field: string]: unknown;
}

function logLines(gw: MainProcess): LogLine[] {
  return gw
    .stdout()
    .split("\n")
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as LogLine];
      } catch {
        return []; // a line still being written
      }
    });
}

/** Resolves with the log lines once `done` holds for them; rejects when the process ends first. */
function waitForLines(gw: MainProcess, done: (lines: LogLine[]) => boolean): Promise<LogLine[]> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const lines = logLines(gw);
      if (!done(lines)) return;
      gw.proc.stdout!.off("data", check);
      resolve(lines);
    };
    gw.proc.stdout!.on("data", check);
    void gw.exited.then((code) => reject(new Error(`the gateway exited (${code}):\n${gw.stdout()}${gw.stderr()}`)));
    check();
  });
}

const listeningWorkers = (lines: LogLine[]) => new Set(lines.filter((l) => l.msg.startsWith("listening on") && l.worker !== undefined).map((l) => l.worker!));

/** the primary said so, and each worker's own line is in */
const allListening = (lines: LogLine[]) => lines.some((l) => l.msg.startsWith("2 workers listening")) && listeningWorkers(lines).size === 2;

async function startWorkers(config: string): Promise<MainProcess> {
  const gw = await processes.startMain(BUILT_ENTRY, ["--config", config]);
  await waitForLines(gw, allListening);
  return gw;
}

/** `command args… --port N` in a process group of its own; resolves once its 2 workers listen. */
async function spawnWorkers(command: string, args: string[]): Promise<MainProcess> {
  const port = await freePort();
  const proc = spawn(command, [...args, "--port", String(port)], { cwd: REPO_ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  proc.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | string>((resolve) => proc.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
  const gw: MainProcess = { proc, url: `http://127.0.0.1:${port}`, stdout: () => stdout, stderr: () => stderr, exited };
  others.push(gw);
  await waitForLines(gw, allListening);
  return gw;
}

async function askStream(url: string): Promise<Response> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  if (res.status !== 200) throw new Error(`stream refused: ${res.status} ${await res.text()}`);
  return res;
}

async function readRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  let rest = "";
  for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
  return rest;
}

let requests = 0;
/** One chat over a connection of its own (the primary hands each new connection to the next worker). */
function chat(url: string, body: Record<string, unknown> = {}): Promise<{ status: number; requestId: string; text: string }> {
  const requestId = `workers-${++requests}`;
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/chat/completions`,
      { method: "POST", agent: false, headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "x-request-id": requestId } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode!, requestId, text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }));
  });
}

/** The worker that answered each request, from the request lines. */
async function workersOf(gw: MainProcess, requestIds: string[]): Promise<number[]> {
  const lines = await waitForLines(gw, (all) => requestIds.every((id) => all.some((l) => l.requestId === id)));
  return requestIds.map((id) => lines.find((l) => l.requestId === id)!.worker!);
}

/** The sum of a family's samples whose line contains `filter`. */
function metricSum(text: string, name: string, filter = ""): number {
  return text
    .split("\n")
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(filter))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

async function metrics(gw: MainProcess): Promise<string> {
  const res = await fetch(`${gw.url}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

describe("two workers on PostgreSQL and Redis", () => {
  let gw: MainProcess;
  beforeAll(async () => {
    gw = await startWorkers(writeConfig("serve.json", { store: { driver: "postgres", url: await postgres.createDatabase() } }));
  });

  it("serves from both workers, each line carrying its worker's id and pid", async () => {
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await chat(gw.url));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const served = await workersOf(gw, answers.map((a) => a.requestId));
    expect(new Set(served).size).toBe(2);
    const lines = logLines(gw);
    const started = listeningWorkers(lines);
    expect(started.size).toBe(2);
    for (const worker of served) expect(started.has(worker)).toBe(true);
    // one process per worker, none of them the primary
    const pids = new Set(lines.filter((l) => l.msg === "request").map((l) => l.pid));
    expect(pids.size).toBe(2);
    expect(pids.has(gw.proc.pid!)).toBe(false);
  });

  it("continues a conversation whichever worker takes each turn", async () => {
    const turns: string[] = [];
    const expected: string[] = [];
    for (const question of ["first", "second", "third", "fourth"]) {
      const answer = await chat(gw.url, { chatId: "across-workers", messages: [{ role: "user", content: question }] });
      expect(answer.status).toBe(200);
      turns.push(answer.requestId);
      expected.push(question);
      expect(upstream.last().body.messages.map((m) => m.content)).toEqual(expected);
      expected.push(UPSTREAM_DEFAULTS.text);
    }
    expect(new Set(await workersOf(gw, turns)).size).toBe(2);
  });

  it("answers /metrics for the whole instance, whichever worker is scraped", async () => {
    const before = await metrics(gw);
    const served = [await chat(gw.url), await chat(gw.url), await chat(gw.url), await chat(gw.url)];
    expect(new Set(await workersOf(gw, served.map((a) => a.requestId))).size).toBe(2);
    // each scrape reaches one worker (a connection each): all of them give the same totals
    const after = await Promise.all([metrics(gw), metrics(gw)]);
    for (const text of after) {
      expect(metricSum(text, "sluice_requests_total", 'route="/v1/chat/completions"') - metricSum(before, "sluice_requests_total", 'route="/v1/chat/completions"')).toBe(4);
      // a gauge of state is not summed: both workers saw the channel answer, the instance says 1
      expect(metricSum(text, "sluice_channel_up", 'channel="up"')).toBe(1);
      expect(metricSum(text, "sluice_inflight_requests")).toBe(0);
    }
  });

  it("reloads each worker once on SIGHUP to the primary", async () => {
    const reloaded = (lines: LogLine[]) => lines.filter((l) => l.msg === "config reloaded");
    expect(reloaded(logLines(gw))).toHaveLength(0);
    gw.proc.kill("SIGHUP");
    const lines = await waitForLines(gw, (all) => new Set(reloaded(all).map((l) => l.worker)).size === 2);
    expect(new Set(reloaded(lines).map((l) => l.worker))).toEqual(listeningWorkers(lines));
    expect(metricSum(await metrics(gw), "sluice_config_reloads_total", 'outcome="ok"')).toBe(2);
    expect((await chat(gw.url)).status).toBe(200);
  });

  it("replaces a worker that dies, and the instance's counters never go back", async () => {
    const countBefore = metricSum(await metrics(gw), "sluice_requests_total");
    const before = listeningWorkers(logLines(gw));
    const victim = logLines(gw).find((l) => l.msg.startsWith("listening on") && l.worker === Math.min(...before))!;
    process.kill(victim.pid, "SIGKILL");
    const lines = await waitForLines(gw, (all) => listeningWorkers(all).size === 3);
    const died = lines.find((l) => l.msg.includes("exited unexpectedly"))!;
    expect(died).toMatchObject({ level: "error", worker: victim.worker, workerPid: victim.pid, signal: "SIGKILL" });
    const replacement = [...listeningWorkers(lines)].find((w) => !before.has(w))!;
    const served: string[] = [];
    for (let i = 0; i < 4; i++) {
      const answer = await chat(gw.url);
      expect(answer.status).toBe(200);
      served.push(answer.requestId);
    }
    const workers = new Set(await workersOf(gw, served));
    expect(workers.has(replacement)).toBe(true);
    expect(workers.has(victim.worker!)).toBe(false);
    // the dead worker's requests stay counted (as last collected), so rate() sees no reset
    expect(metricSum(await metrics(gw), "sluice_requests_total")).toBeGreaterThanOrEqual(countBefore + 4);
  });
});

describe("stopping two workers", () => {
  it("SIGTERM drains a stream in flight on every worker and exits 0 with its usage row written", async () => {
    const url = await postgres.createDatabase();
    const gw = await startWorkers(writeConfig("drain.json", { store: { driver: "postgres", url }, upstreamUrl: slowUpstream.url }));
    const res = await askStream(gw.url);
    const { text, reader } = await readUntil(res, (t) => t.includes('"content"'));
    gw.proc.kill("SIGTERM");
    const rest = await readRest(reader);
    expect(parseSse(text + rest).at(-1)!.data).toBe("[DONE]");
    expect(await gw.exited).toBe(0);
    // each worker ran its own graceful shutdown, then the primary stopped
    const lines = logLines(gw);
    expect(lines.filter((l) => l.msg === "stopped").map((l) => l.worker ?? "primary").sort()).toEqual([...listeningWorkers(lines), "primary"].sort());
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const { rows } = await db.query<{ status: number; output_tokens: string }>("SELECT status, output_tokens FROM usage");
      expect(rows).toHaveLength(1);
      expect(rows[0]!.status).toBe(200);
      expect(Number(rows[0]!.output_tokens)).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
  });
  it("kill -9 of the primary takes its workers with it (none left orphaned)", async () => {
    const gw = await startWorkers(writeConfig("orphans.json", { store: { driver: "postgres", url: await postgres.createDatabase() } }));
    const pids = logLines(gw).filter((l) => l.msg.startsWith("listening on")).map((l) => l.pid);
    expect(pids).toHaveLength(2);
    gw.proc.kill("SIGKILL");
    await gw.exited;
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    // not our children: nothing to await but their absence
    await expect.poll(() => pids.filter(alive), { interval: 50, timeout: 5_000 }).toEqual([]);
  });

  it("Ctrl-C (SIGINT to the whole process group) drains once; a second Ctrl-C cuts at once", async () => {
    const config = writeConfig("ctrl-c.json", { store: { driver: "postgres", url: await postgres.createDatabase() }, upstreamUrl: longUpstream.url });
    const gw = await spawnWorkers(process.execPath, [...BUILT_ENTRY, "--config", config]);
    const { text, reader } = await readUntil(await askStream(gw.url), (t) => t.includes('"content"'));
    process.kill(-gw.proc.pid!, "SIGINT");
    // the workers hear it twice (from the terminal and from the primary): still the first
    await waitForLines(gw, (lines) => lines.filter((l) => l.msg.startsWith("SIGINT: draining")).length === 3);
    const contentFrames = (t: string) => parseSse(t).filter((f) => f.data.includes('"content"')).length;
    let seen = text;
    const before = contentFrames(seen);
    while (contentFrames(seen) === before) {
      const r = await reader.read();
      expect(r.done).toBe(false);
      seen += Buffer.from(r.value!).toString();
    }
    expect(seen).not.toContain("shutting_down");
    process.kill(-gw.proc.pid!, "SIGINT");
    const frames = parseSse(seen + (await readRest(reader)));
    expect(JSON.parse(frames.at(-1)!.data).error.code).toBe("shutting_down");
    expect(await gw.exited).toBe(0);
  });

  it("npm start: SIGTERM to npm drains the workers and exits 0, nothing left on the port", async () => {
    const config = writeConfig("npm.json", { store: { driver: "postgres", url: await postgres.createDatabase() }, upstreamUrl: slowUpstream.url });
    const gw = await spawnWorkers("npm", ["start", "--", "--config", config]);
    const { text, reader } = await readUntil(await askStream(gw.url), (t) => t.includes('"content"'));
    gw.proc.kill("SIGTERM");
    expect(parseSse(text + (await readRest(reader))).at(-1)!.data).toBe("[DONE]");
    expect(await gw.exited).toBe(0);
    expect(logLines(gw).filter((l) => l.msg === "stopped")).toHaveLength(3);
    await expect(fetch(`${gw.url}/healthz`)).rejects.toThrow();
  });

  // a PID namespace of its own makes the primary PID 1, where the kernel drops every signal without a handler
  const canUnshare = spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "true"]).status === 0;
  it.skipIf(!canUnshare)("as PID 1: SIGTERM drains the workers and exits 0", async () => {
    const config = writeConfig("pid1.json", { store: { driver: "postgres", url: await postgres.createDatabase() }, upstreamUrl: slowUpstream.url });
    const gw = await spawnWorkers("unshare", ["--pid", "--fork", "--kill-child", "--mount-proc", process.execPath, ...BUILT_ENTRY, "--config", config]);
    const { text, reader } = await readUntil(await askStream(gw.url), (t) => t.includes('"content"'));
    // the primary is PID 1 inside: signalled by its outer pid, unshare's child
    const primary = spawnSync("pgrep", ["-P", String(gw.proc.pid)], { encoding: "utf8" }).stdout.trim();
    expect(primary, gw.stdout()).toMatch(/^\d+$/);
    process.kill(Number(primary), "SIGTERM");
    expect(parseSse(text + (await readRest(reader))).at(-1)!.data).toBe("[DONE]");
    expect(await gw.exited).toBe(0);
    expect(logLines(gw).filter((l) => l.msg === "stopped")).toHaveLength(3);
  });
});

describe("a start that cannot work", () => {
  it("refuses two workers on the SQLite store, naming the postgres store and the cluster", async () => {
    const gw = await processes.spawnMain(BUILT_ENTRY, ["--config", writeConfig("sqlite.json", { store: { driver: "sqlite", path: join(dir, "w.db") }, cluster: undefined })]);
    expect(await gw.exited).toBe(1);
    const fatal = logLines(gw).find((l) => l.level === "fatal")!;
    expect(fatal.problems).toEqual([expect.stringMatching(/^server\.workers: 2 workers need the postgres store .*"driver": "postgres".* and cluster\.redisUrl.*this config has the sqlite store and no cluster\.redisUrl/)]);
    expect(gw.stdout()).not.toContain("listening on");
  });

  it("ends the start (exit 1) when the workers cannot reach PostgreSQL, their reason in the log", async () => {
    const closed = `postgres://postgres@127.0.0.1:${await freePort()}/none`;
    const gw = await processes.spawnMain(BUILT_ENTRY, ["--config", writeConfig("unreachable.json", { store: { driver: "postgres", url: closed } })]);
    expect(await gw.exited).toBe(1);
    const lines = logLines(gw);
    // the worker's own line says why, the primary's that the start is over
    const fatal = lines.filter((l) => l.level === "fatal");
    expect(fatal.some((l) => l.pid !== gw.proc.pid && /the postgres store cannot be used: connect ECONNREFUSED/.test(l.msg))).toBe(true);
    expect(fatal.some((l) => l.pid === gw.proc.pid && /ended before listening .*: the gateway could not start/.test(l.msg))).toBe(true);
  });
});
