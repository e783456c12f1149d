// The gateway's real entry as a child process on a free loopback port, for tests of start-up,
// shutdown and crashes. stdout and stderr are always drained; killAll() ends what a file started.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** the TypeScript sources under tsx (`npm run dev` serves them through listhen: test/dev-server.test.ts) */
export const SOURCE_ENTRY = ["--import", "tsx", `${REPO_ROOT}src/main.ts`];
/** `npm start`'s entry: the transpiled build (scripts/build.mjs) */
export const BUILT_ENTRY = [`${REPO_ROOT}dist/main.js`];

export interface MainProcess {
  proc: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  /** exit code, or the signal's name when a signal ended it */
  exited: Promise<number | string>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
}

export function createMainProcesses() {
  const children: MainProcess[] = [];

  /** Spawns `node <entry> [--config …] --port …` in `cwd` (default: the repository). */
  async function spawnMain(entry: string[], args: string[], cwd = REPO_ROOT): Promise<MainProcess> {
    const port = await freePort();
    const proc = spawn(process.execPath, [...entry, ...args, "--port", String(port)], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    proc.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | string>((resolve) => proc.once("exit", (code, signal) => resolve(code ?? signal ?? -1)));
    const child: MainProcess = { proc, url: `http://127.0.0.1:${port}`, stdout: () => stdout, stderr: () => stderr, exited };
    children.push(child);
    return child;
  }

  /**
   * spawnMain, then waits for the `listening on` log line — or, when the configured log level hides
   * it (warn, silent), for `/healthz` to answer — and fails when the process ends first.
   */
  async function startMain(entry: string[], args: string[], cwd?: string): Promise<MainProcess> {
    const child = await spawnMain(entry, args, cwd);
    let ended = false;
    const listening = new Promise<void>((resolve) => {
      const check = () => /listening on/.test(child.stdout()) && (child.proc.stdout!.off("data", check), resolve());
      child.proc.stdout!.on("data", check);
      void (async () => {
        while (!ended && !(await answers(`${child.url}/healthz`))) await new Promise((r) => setTimeout(r, 25));
        resolve();
      })();
    });
    const exited = child.exited.then((code) => Promise.reject(new Error(`the gateway exited (${code}) before listening:\n${child.stdout()}${child.stderr()}`)));
    try {
      await Promise.race([listening, exited]);
    } finally {
      ended = true;
    }
    return child;
  }

  /** Kills (SIGKILL) every child still running; resolves when all have exited. */
  async function killAll(): Promise<void> {
    for (const child of children.splice(0)) {
      if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill("SIGKILL");
      await child.exited;
    }
  }

  return { spawnMain, startMain, killAll };
}
