// Entry: loads the config, opens the store, builds the gateway and listens. `--help` lists the
// options. Signals (docs/operations.md#signals): SIGTERM/SIGINT stop accepting, let requests in flight finish
// for `server.shutdownTimeoutMs`, cut the rest with an error event and their usage rows, flush, exit 0
// (a second signal cuts at once); SIGHUP and a change of the config file reload it. An error that
// escapes everything else is logged and counted, and the gateway carries on. Everything is logged
// through one logger (src/observability/logger.ts), flushed before every exit. With `server.workers`
// above 1 this process is the primary of that many workers, each running all this (src/workers.ts).
import cluster from "node:cluster";
import type { Server } from "node:http";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { toNodeHandler } from "h3/node";
import { ConfigError, loadConfigFile } from "./config/load.js";
import type { Config } from "./config/schema.js";
import { watchConfigFile } from "./config/watch.js";
import { createGateway, type Gateway } from "./gateway.js";
import { createHttpServer } from "./http/server.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { openStore } from "./store/index.js";
import { loadTokenizer } from "./tokens/counter.js";
import { hearPrimary, runPrimary, workerLogger } from "./workers.js";

const HELP = `Usage: npm start -- [options]   (or: node dist/main.js [options])

Options:
  --config PATH   the config file (default ./config.json, or env SLUICE_CONFIG)
  --port N        the port to listen on, over server.port (or env PORT)
  --pretty        human-readable log lines instead of JSON (needs pino-pretty; the default on a terminal)
  --help          this text

Signals: SIGTERM/SIGINT drain and exit 0; SIGHUP reloads the config (so does saving the file).
With server.workers > 1 this process starts the workers and passes the signals on.`;
/** Time for flushing after the drain (usage rows, share-link reports) before a forced exit: with the
 *  default grace of 25 s, the whole shutdown ends within Kubernetes' default 30 s (docs/operations.md#signals):
 *  25 s grace + 2 s settling of cut requests + 1 s for their answers + 1 s of finish reports. */
const FLUSH_GRACE_MS = 4_500;
/** Time for answers already ended by the drain (a cut stream's error event) to reach their clients. */
const CLOSE_GRACE_MS = 1_000;

/** The logger once the config gave its level and destination; a fatal start error may come before. */
let logger: Logger | undefined;
let pretty: boolean | undefined;

async function main(): Promise<void> {
  // 1. Arguments and environment, then the config and its logger.
  const { values } = parseArgs({ options: { config: { type: "string" }, port: { type: "string" }, pretty: { type: "boolean" }, help: { type: "boolean" } }, strict: true });
  if (values.help) {
    console.log(HELP);
    return;
  }
  pretty = values.pretty || undefined;
  const configPath = resolve(values.config ?? process.env.SLUICE_CONFIG ?? "./config.json");
  const portText = values.port ?? process.env.PORT;
  const load = () => withPort(loadConfigFile(configPath), portText);
  const config = load();
  const log = (logger = workerLogger(createLogger({ ...config.server.log, pretty })));
  if (config.server.workers > 1 && cluster.isPrimary) return runPrimary({ config, configPath, log, pretty });

  // 2. The store and the gateway.
  const store = await openStore(config.store, { batchesDir: config.batches.dir });
  const gateway = createGateway(config, { store, loadConfig: load, logger: log });
  process.on("uncaughtException", (err) => lastResort(gateway, log, "uncaught_exception", err));
  process.on("unhandledRejection", (err) => lastResort(gateway, log, "unhandled_rejection", err));

  // 3. The configured models' tokenizers, loaded before any request can wait for one (a load blocks
  //    the event loop about half a second), then listen: the configured port or an error, never a
  //    silently different one.
  for (const name of new Set([...config.llmModels.map((m) => m.tokenizer), "cl100k_base" as const])) loadTokenizer(name);
  const server = createHttpServer(toNodeHandler(gateway.app), config.server);
  await new Promise<void>((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(config.server.port, config.server.host, () => {
      server.off("error", reject);
      resolveListen();
    });
  });
  log.info({ config: configPath, store: config.store.driver }, `listening on http://${config.server.host}:${config.server.port}`);
  log.flush(); // said at once, not with the next batch

  // 4. Reload on SIGHUP and when the config file changes.
  // (the gateway logs the outcome, whoever asked)
  const reload = (why: string) => {
    log.info({ trigger: why }, "reloading the config");
    void gateway.reload();
  };
  process.on("SIGHUP", () => reload("SIGHUP"));
  // a worker's primary watches the file (one watcher, one reload: src/workers.ts)
  if (!cluster.isWorker) watchConfigFile(configPath, () => reload("config file changed"), log);

  // 5. Graceful shutdown.
  let closing = false;
  const cut = (signal: string) => {
    log.warn({ signal }, `${signal} again: cutting what is left now`);
    void gateway.drain(0);
  };
  const shutdown = async (signal: string) => {
    if (closing) {
      // a worker's cut comes from its primary: a signal to the whole process group (a terminal's
      // Ctrl-C, systemd) reaches a worker twice, directly and through the primary, and is one signal
      if (!cluster.isWorker) cut(signal);
      return;
    }
    closing = true;
    const graceMs = config.server.shutdownTimeoutMs;
    log.info({ signal, graceMs }, `${signal}: draining (up to ${graceMs} ms)`);
    setTimeout(() => process.exit(1), graceMs + FLUSH_GRACE_MS).unref();
    server.close(); // no new connections; requests in flight go on
    server.stopKeepAlive(); // ... and their connections close once they are answered
    server.closeIdleConnections();
    await gateway.drain(graceMs);
    await connectionsClosed(server, CLOSE_GRACE_MS);
    server.closeAllConnections(); // whatever is left (a client trickling its body) does not hold the exit
    await gateway.close();
    await store.close();
    log.info("stopped");
    await log.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  if (cluster.isWorker) {
    hearPrimary({
      shutdown: (signal) => void shutdown(signal),
      cut: (signal) => {
        if (!closing) void shutdown(signal);
        cut(signal);
      },
      reload: (signal) => reload(signal),
    });
  }
}

function withPort(config: Config, portText: string | undefined): Config {
  if (portText === undefined) return config;
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ConfigError("--port", [`port must be 1-65535, got ${JSON.stringify(portText)}`]);
  config.server.port = port;
  return config;
}

/** Resolves once every connection has closed (idle ones are closed as their answers end), or after `ms`. */
function connectionsClosed(server: Server, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const tick = setInterval(() => server.closeIdleConnections(), 20);
    const done = () => {
      clearInterval(tick);
      clearTimeout(deadline);
      resolve();
    };
    const deadline = setTimeout(done, ms);
    server.once("close", done);
    server.getConnections((_, count) => count === 0 && done());
  });
}

/** The process's last resort: never a silent exit. Names, codes and stacks only — no request data. */
function lastResort(gateway: Gateway, log: Logger, kind: "uncaught_exception" | "unhandled_rejection", err: unknown): void {
  gateway.processError(kind);
  log.error({ kind, err }, `${kind} (the gateway carries on)`);
}

main().catch((err: unknown) => {
  // never a silent failure: a logger that is off (level silent) or not yet made gives way to stdout
  const out = logger?.isLevelEnabled("fatal") ? logger : createLogger({ level: "info", destination: "stdout", pretty });
  if (err instanceof ConfigError) out.fatal({ problems: err.problems }, err.message.split("\n", 1)[0]!.replace(/:$/, ""));
  else out.fatal({ err }, `failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
  void out.close().then(() => process.exit(1));
});
