// Several processes on one port (`server.workers` > 1, docs/operations.md#workers). src/main.ts then becomes a
// node:cluster primary that forks the workers, each running the whole gateway; node:cluster shares
// the listening socket (on Linux the primary accepts and hands connections out in turn). The primary
// serves no request and opens no store. It:
// 1. starts the workers and says "N workers listening" once all are; a worker that ends before that
//    ends the start (exit 1; the worker's own lines say why);
// 2. replaces a worker that exits unexpectedly: at once the first time, then with a doubling back-off
//    while replacements keep dying young, so a crash loop does not spin;
// 3. on SIGTERM/SIGINT tells every worker to drain (each runs its own graceful shutdown within
//    `server.shutdownTimeoutMs`) and exits once all have exited: 0, or 1 when one of them failed;
//    a second signal has them cut what is left at once (only the primary decides a cut: a signal
//    to the whole process group reaches each worker twice, directly and as a command);
// 4. on SIGHUP or a save of the config file has one worker reload: its reload notice (the cluster
//    state, which workers require) reloads the others as it reloads other instances, each once;
// 5. relays the workers' stdout and stderr in whole lines, so two workers' lines never mix in one
//    pipe; every worker line carries `worker` (its cluster id; a replacement gets a new one);
// 6. collects the workers' metrics when one of them is scraped (src/metrics/cluster.ts).
import cluster, { type Worker } from "node:cluster";
import type { Readable } from "node:stream";
import { pino } from "pino";
import type { Config } from "./config/schema.js";
import { watchConfigFile } from "./config/watch.js";
import { serveInstanceMetrics } from "./metrics/cluster.js";
import type { Logger } from "./observability/logger.js";

/** A worker that lived this long before it died was not in a crash loop: the back-off starts over. */
const STABLE_MS = 30_000;
const RESTART_BACKOFF_MS = 1_000;
const RESTART_BACKOFF_MAX_MS = 30_000;
/** After the drain, beyond the workers' own deadline for flushing (src/main.ts: 15 s), before they are killed. */
const WORKER_DEADLINE_MS = 20_000;
/** A worker's output without a newline for this long is relayed as it is. */
const MAX_LINE_BYTES = 1024 * 1024;
/** Past this much relayed output waiting for a stalled stdout, output is dropped (as the logger does). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const NEWLINE = 0x0a;
const COMMAND = "sluice:command";

export type PrimaryCommand = "shutdown" | "cut" | "reload";

export interface PrimaryOptions {
  /** validated: more than one worker, on the postgres store and a cluster */
  config: Config;
  configPath: string;
  log: Logger;
  /** `--pretty` given; absent: pretty when the destination is a terminal (the workers' never is) */
  pretty: boolean | undefined;
}

export function runPrimary({ config, configPath, log, pretty }: PrimaryOptions): void {
  const count = config.server.workers;
  const address = `http://${config.server.host}:${config.server.port}`;
  const args = process.argv.slice(2);
  if ((pretty ?? isTerminal(config.server.log.destination)) && !args.includes("--pretty")) args.push("--pretty");
  cluster.setupPrimary({ args, stdio: ["ignore", "pipe", "pipe", "ipc"] });
  serveInstanceMetrics();
  const out = { stdout: relayOutput(1), stderr: relayOutput(2) };
  const bornAt = new Map<number, number>();
  const listening = new Set<number>();
  /** workers whose process has not closed yet (their output may still be coming) */
  const running = new Set<number>();
  const restarts = new Set<NodeJS.Timeout>();
  let started = false;
  let stopping = false;
  let failed = false;
  let youngDeaths = 0;
  const workers = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);

  // 1. Start, and tell when every worker listens.
  function fork(): void {
    const worker = cluster.fork();
    bornAt.set(worker.id, Date.now());
    running.add(worker.id);
    relayLines(worker.process.stdout!, out.stdout);
    relayLines(worker.process.stderr!, out.stderr);
    worker.on("error", () => {}); // a message to a worker that just died: its exit says so
    worker.process.once("close", () => {
      running.delete(worker.id);
      finishIfDone();
    });
  }
  cluster.on("listening", (worker) => {
    listening.add(worker.id);
    if (started || listening.size < count) return;
    started = true;
    log.info({ workers: count, config: configPath, store: config.store.driver }, `${count} workers listening on ${address}`);
    log.flush();
  });

  // 2. A worker that dies: replaced, unless the instance is stopping or never started.
  cluster.on("exit", (worker, code, signal) => {
    listening.delete(worker.id);
    const lived = Date.now() - (bornAt.get(worker.id) ?? 0);
    bornAt.delete(worker.id);
    const how = signal ?? `exit code ${code}`;
    if (stopping) {
      if (code !== 0 && code !== null) failed = true;
      return;
    }
    if (!started) {
      log.fatal({ worker: worker.id, code, signal }, `worker ${worker.id} ended before listening (${how}): the gateway could not start`);
      failed = true;
      stop();
      return;
    }
    youngDeaths = lived < STABLE_MS ? youngDeaths + 1 : 0;
    const delayMs = youngDeaths <= 1 ? 0 : Math.min(RESTART_BACKOFF_MS * 2 ** (youngDeaths - 2), RESTART_BACKOFF_MAX_MS);
    // exit code 0: the worker was stopped on its own (a SIGTERM to its pid), a way to recycle one
    const level = code === 0 ? "warn" : "error";
    log[level]({ worker: worker.id, workerPid: worker.process.pid, code, signal, restartInMs: delayMs }, `worker ${worker.id} exited unexpectedly (${how}): replacing it`);
    const timer = setTimeout(() => {
      restarts.delete(timer);
      fork();
    }, delayMs);
    restarts.add(timer);
  });

  // 3. Shutdown: each worker drains itself; a second signal cuts.
  function stop(signal?: string): void {
    if (stopping) {
      log.warn({ signal }, `${signal} again: the workers cut what is left now`);
      for (const worker of workers()) command(worker, "cut", signal);
      return;
    }
    stopping = true;
    restarts.forEach(clearTimeout);
    const graceMs = config.server.shutdownTimeoutMs;
    if (signal) log.info({ signal, graceMs, workers: running.size }, `${signal}: draining ${running.size} workers (up to ${graceMs} ms)`);
    for (const worker of workers()) {
      // one still starting has nothing in flight (and may not hear commands yet)
      if (listening.has(worker.id)) command(worker, "shutdown", signal);
      else worker.process.kill("SIGTERM");
    }
    setTimeout(() => {
      log.error({ workers: running.size }, "workers still running past their deadline: killed");
      failed = true;
      for (const worker of workers()) worker.process.kill("SIGKILL");
    }, graceMs + WORKER_DEADLINE_MS).unref();
    finishIfDone();
  }
  function finishIfDone(): void {
    if (!stopping || running.size > 0) return;
    if (!failed) log.info("stopped");
    void Promise.all([flushed(out.stdout), flushed(out.stderr), log.close()]).then(() => process.exit(failed ? 1 : 0));
  }
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));

  // 4. Reload: one worker, the others through the cluster state.
  const reload = (why: string) => {
    const worker = workers().find((w) => listening.has(w.id) && w.isConnected());
    if (!worker) return void log.warn({ trigger: why }, "no worker listening to reload: the config is read again as workers start");
    log.info({ trigger: why, worker: worker.id }, "reloading the config (through one worker: the others hear of it)");
    command(worker, "reload");
  };
  process.on("SIGHUP", () => reload("SIGHUP"));
  watchConfigFile(configPath, () => reload("config file changed"), log);

  // never a silent exit of the primary: its workers would go with it
  process.on("uncaughtException", (err) => log.error({ kind: "uncaught_exception", err }, "uncaught_exception in the primary (it carries on)"));
  process.on("unhandledRejection", (err) => log.error({ kind: "unhandled_rejection", err }, "unhandled_rejection in the primary (it carries on)"));
  log.info({ workers: count }, `starting ${count} workers`);
  for (let i = 0; i < count; i++) fork();
}

/** In a worker: the primary's commands (see runPrimary), each with the signal the primary got. */
export function hearPrimary(on: Record<PrimaryCommand, (signal: string) => void>): void {
  process.on("message", (message: { type?: string; command?: PrimaryCommand; signal?: string }) => {
    if (message?.type === COMMAND && message.command && Object.hasOwn(on, message.command)) on[message.command](message.signal ?? "the primary");
  });
}

/** In a worker, lines carry its id; elsewhere the logger is as it is. */
export function workerLogger(log: Logger): Logger {
  if (!cluster.isWorker) return log;
  return Object.assign(log.child({ worker: cluster.worker!.id }), { close: log.close });
}

function command(worker: Worker, command: PrimaryCommand, signal?: string): void {
  if (worker.isConnected()) worker.send({ type: COMMAND, command, signal }, () => {});
}

type RelayOutput = ReturnType<typeof pino.destination>;

/** The primary's stdout or stderr for relayed lines: asynchronous, so a stalled reader never stalls
 *  the primary (which hands out the connections), bounded like the logger's. */
function relayOutput(fd: 1 | 2): RelayOutput {
  const boom = pino.destination({ dest: fd, sync: false, minLength: 1, maxLength: MAX_BUFFERED_BYTES, contentMode: "buffer" });
  boom.on("error", () => {}); // a closed stdout: nothing more to say there
  return boom;
}

/** Copies whole lines only, so each write of `to` holds whole lines of one worker. */
function relayLines(from: Readable, to: RelayOutput): void {
  let partial: Buffer[] = [];
  let partialBytes = 0;
  const write = (bytes: Buffer) => void to.write(bytes as unknown as string);
  from.on("data", (chunk: Buffer) => {
    const end = chunk.lastIndexOf(NEWLINE);
    if (end === -1 && partialBytes + chunk.length < MAX_LINE_BYTES) {
      partial.push(chunk);
      partialBytes += chunk.length;
      return;
    }
    const cut = end === -1 ? chunk.length : end + 1;
    write(Buffer.concat([...partial, chunk.subarray(0, cut)]));
    partial = cut < chunk.length ? [chunk.subarray(cut)] : [];
    partialBytes = chunk.length - cut;
  });
  from.on("end", () => partial.length > 0 && write(Buffer.concat(partial)));
  from.on("error", () => {});
}

/** Resolves once everything relayed is written (minLength > 0: flush waits for the writes). */
function flushed(boom: RelayOutput): Promise<void> {
  return new Promise((resolve) => boom.flush(() => resolve()));
}

function isTerminal(destination: string): boolean {
  if (destination === "stdout") return process.stdout.isTTY === true;
  if (destination === "stderr") return process.stderr.isTTY === true;
  return false;
}
