// Servers the benchmark runs as child processes (Sluice, the floor proxy): start on a free port,
// wait until they answer, read their memory, and never leave one running when the bench exits.
import { spawn, type ChildProcess } from "node:child_process";
import { open, readFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

export interface NodeServer {
  name: string;
  url: string;
  pid: number;
  /** from the spawn to the first answer `ready` accepted */
  readyMs: number;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  /** Node's arguments: the script (compiled JavaScript, as users run it) and its own arguments;
   *  `--port N` is appended. */
  args: string[];
  /** Polled until `ready(status)` holds. */
  readyPath: string;
  ready: (status: number) => boolean;
  readyTimeoutMs?: number;
  /** how often it is polled (default 200 ms; the start-up section polls every few ms) */
  pollMs?: number;
  /** Send the process's stdout and stderr to this file instead of a pipe: a gateway's log written
   *  to a pipe the busy bench reads late would block it on a full pipe. */
  outputFile?: string;
}

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const OUTPUT_TAIL_CHARS = 4000;
const running = new Set<ChildProcess>();

// The last resort: whatever way the bench ends, no child outlives it.
process.once("exit", () => running.forEach((child) => child.kill("SIGKILL")));
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

export async function spawnNodeServer(name: string, opts: SpawnOptions): Promise<NodeServer> {
  const port = await freePort();
  const file = opts.outputFile === undefined ? undefined : await open(opts.outputFile, "a");
  const spawned = performance.now();
  const child = spawn(process.execPath, [...opts.args, "--port", String(port)], {
    cwd: REPO_ROOT,
    stdio: ["ignore", file?.fd ?? "pipe", file?.fd ?? "pipe"],
  });
  await file?.close(); // the child holds its own copy
  running.add(child);
  let output = "";
  const keepTail = (data: Buffer) => (output = (output + data.toString()).slice(-OUTPUT_TAIL_CHARS));
  child.stdout?.on("data", keepTail);
  child.stderr?.on("data", keepTail);
  const lastOutput = async () => (opts.outputFile === undefined ? output : (await readFile(opts.outputFile, "utf8")).slice(-OUTPUT_TAIL_CHARS));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  exited.then(() => running.delete(child));

  const server: NodeServer = {
    name,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid ?? -1,
    readyMs: 0,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const forced = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(forced);
    },
  };
  try {
    await waitUntilReady(server.url + opts.readyPath, opts.ready, opts.readyTimeoutMs ?? 30_000, () => child.exitCode ?? child.signalCode, opts.pollMs ?? 200);
    server.readyMs = performance.now() - spawned;
  } catch (err) {
    await server.stop();
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`${name} did not start: ${reason}\n--- last output of ${name} ---\n${(await lastOutput()).trim() || "(none)"}`);
  }
  return server;
}

/** Resident memory of a process in MB, from /proc (Linux). */
export async function readRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kb) / 1024;
}

async function waitUntilReady(url: string, ready: (status: number) => boolean, timeoutMs: number, exitCode: () => number | string | null, pollMs: number) {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  // Polling is the only signal a separate process gives that it listens.
  for (;;) {
    const code = exitCode();
    if (code !== null) throw new Error(`it exited (${code})`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      if (ready(res.status)) return;
      last = `GET ${new URL(url).pathname} answered ${res.status}`;
    } catch (err) {
      const cause = err instanceof Error ? (err.cause as { code?: string } | undefined)?.code : undefined;
      last = cause ?? (err instanceof Error ? err.message : String(err));
    }
    if (Date.now() > deadline) throw new Error(`not ready after ${timeoutMs / 1000} s (${last})`);
    await sleep(pollMs);
  }
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
