// nginx as a throwaway server for tests: the shipped deploy/nginx.conf itself, with only the
// instances' addresses, the listen port and nginx's temp paths swapped, run in the foreground from a
// prefix folder of its own on a free loopback port. stop() ends it and removes the folder.
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { afterAll, beforeAll } from "vitest";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUILT_ENTRY, REPO_ROOT, createMainProcesses, freePort, type MainProcess } from "./main-process.js";

export const NGINX_BIN = "/usr/sbin/nginx";
export const SHIPPED_NGINX_CONF = join(REPO_ROOT, "deploy/nginx.conf");

/** `server NAME PARAMS;` in the upstream block */
const SERVER_LINE = /^([ \t]*)server\s+(\S+)([^;]*);/gm;

export interface Nginx {
  /** `http://127.0.0.1:PORT` */
  url: string;
  proc: ChildProcess;
  /** the access log (written to nginx's stdout by the shipped config) */
  accessLog(): string;
  stderr(): string;
  stop(): Promise<void>;
}

export interface NginxOptions {
  /** `host:port` of each instance, in place of the shipped `server` lines */
  upstreams: string[];
  /** the config to run (default: deploy/nginx.conf) */
  confPath?: string;
}

/**
 * The shipped config pointed at `upstreams`: in its upstream block, the n-th instance named becomes
 * the n-th address (every line naming it, `resolve` dropped: loopback addresses need no DNS),
 * `listen 80` becomes the loopback `port`, and the temp paths move to `dir`. Throws when the shipped
 * file no longer has what is swapped, so a change there is noticed.
 */
export function nginxConfFor(shipped: string, opts: { upstreams: string[]; port: number; dir: string }): string {
  const block = /(upstream\s+\w+\s*\{)([^}]*)\}/.exec(shipped);
  if (!block) throw new Error("deploy/nginx.conf has no upstream block");
  const names = [...new Set([...block[2]!.matchAll(SERVER_LINE)].map((m) => m[2]!))];
  if (names.length !== opts.upstreams.length) throw new Error(`deploy/nginx.conf names ${names.length} instances, not ${opts.upstreams.length}`);
  const body = block[2]!.replace(SERVER_LINE, (_, indent: string, name: string, params: string) => `${indent}server ${opts.upstreams[names.indexOf(name)]}${params.replace(/\s+resolve\b/, "")};`);
  let conf = shipped.replace(block[0], `${block[1]}${body}}`);

  if (!/^\s*listen\s+80;/m.test(conf)) throw new Error("deploy/nginx.conf does not listen on port 80");
  conf = conf.replace(/^(\s*)listen\s+80;/m, `$1listen 127.0.0.1:${opts.port};`);

  if (!/^http\s*\{/m.test(conf)) throw new Error("deploy/nginx.conf has no http block");
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((kind) => `  ${kind}_temp_path ${join(opts.dir, `${kind}_temp`)};`);
  return conf.replace(/^http\s*\{/m, (open) => `${open}\n${temp.join("\n")}`);
}

export async function startNginx(opts: NginxOptions): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), "sluice-nginx-"));
  chmodSync(dir, 0o755); // run as root, nginx's workers are `nobody`: they write the temp folders in here
  const port = await freePort();
  const confPath = join(dir, "nginx.conf");
  writeFileSync(confPath, nginxConfFor(readFileSync(opts.confPath ?? SHIPPED_NGINX_CONF, "utf8"), { upstreams: opts.upstreams, port, dir }));

  const globals = `daemon off; pid ${join(dir, "nginx.pid")}; error_log stderr warn;`;
  // stdout is a file: nginx opens /dev/stdout by name, which a socket (node's "pipe") refuses
  const accessLog = join(dir, "access.log");
  const stdout = openSync(accessLog, "a");
  const proc = spawn(NGINX_BIN, ["-p", dir, "-c", confPath, "-g", globals], { stdio: ["ignore", stdout, "pipe"] });
  closeSync(stdout);
  let stderr = "";
  proc.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  proc.on("error", (err) => (stderr += `${err.message}\n`));
  const exited = new Promise<void>((resolve) => proc.once("close", () => resolve()));

  let ended = false;
  void exited.then(() => (ended = true));
  while (!(await accepts(port))) {
    if (ended) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx exited before listening:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }

  return {
    url: `http://127.0.0.1:${port}`,
    proc,
    accessLog: () => readFileSync(accessLog, "utf8"),
    stderr: () => stderr,
    async stop() {
      if (!ended) proc.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

/** `count` built gateways on one config file, behind the shipped nginx. */
export async function startBehindNginx(
  processes: ReturnType<typeof createMainProcesses>,
  configPath: string,
  count = 2,
): Promise<{ instances: MainProcess[]; nginx: Nginx }> {
  const instances = await Promise.all(Array.from({ length: count }, () => processes.startMain(BUILT_ENTRY, ["--config", configPath])));
  const nginx = await startNginx({ upstreams: instances.map((i) => new URL(i.url).host) });
  return { instances, nginx };
}

/** Chat completions an instance has finished (with `status`, when given), from its own /metrics. */
export async function chatsServed(instanceUrl: string, status?: number): Promise<number> {
  const text = await (await fetch(`${instanceUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith('sluice_requests_total{route="/v1/chat/completions"')) continue;
    if (status !== undefined && !line.includes(`status="${status}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

/**
 * `startBehindNginx` for the enclosing describe block (or file): started before its tests, ended
 * after them. `configPath` is called then, so it may write the file.
 */
export function useBehindNginx(configPath: () => string, count = 2): { instances: MainProcess[]; nginx: Nginx } {
  const processes = createMainProcesses();
  const started = { instances: [] as MainProcess[], nginx: undefined as unknown as Nginx };
  beforeAll(async () => void Object.assign(started, await startBehindNginx(processes, configPath(), count)));
  afterAll(async () => {
    await started.nginx?.stop();
    await processes.killAll();
  });
  return started;
}

export interface Load<T> {
  /** every finished send's result, in the order they finished */
  readonly results: T[];
  /** resolves once `n` sends have finished */
  reached(n: number): Promise<void>;
  /** lets each loop finish its send in flight, then resolves with every result */
  stop(): Promise<T[]>;
}

/** `workers` loops, each calling `send` again as soon as its last call finished, until stop(). */
export function startLoad<T>(workers: number, send: (worker: number) => Promise<T>): Load<T> {
  const results: T[] = [];
  let stopped = false;
  let waiters: Array<{ n: number; resolve: () => void }> = [];
  const loop = async (worker: number) => {
    while (!stopped) {
      results.push(await send(worker));
      waiters = waiters.filter((w) => (results.length >= w.n ? (w.resolve(), false) : true));
    }
  };
  const loops = Promise.all(Array.from({ length: workers }, (_, w) => loop(w)));
  return {
    results,
    reached: (n) => (results.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
    async stop() {
      stopped = true;
      await loops;
      return results;
    },
  };
}
