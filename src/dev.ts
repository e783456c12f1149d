// `npm run dev`'s entry: the gateway behind listhen's dev server (`listhen -w src/dev.ts`). listhen
// loads this module (TypeScript, through jiti), serves its default export — a node (req, res)
// handler — and loads it again when a .ts or .js file under src/ changes: the gateway serving until
// then is drained and closed, and a new one is built from the changed sources. The config is
// ./config.json (or env SLUICE_CONFIG); saving it reloads it as under `npm start`. The port and host
// are listhen's (`--port` or PORT, `--host`). Production runs src/main.ts on its own node:http
// server instead, for the bounded waits and the drain listhen has not
// (docs/operations.md#development-server).
import { resolve } from "node:path";
import { toNodeHandler } from "h3/node";
import { loadConfigFile } from "./config/load.js";
import { watchConfigFile } from "./config/watch.js";
import { createGateway, type Gateway } from "./gateway.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { openStore } from "./store/index.js";
import type { Store } from "./store/types.js";

/** Time the replaced gateway gets to finish its requests in flight before they are cut. */
const RETIRE_MS = 5_000;

interface Loaded {
  gateway: Gateway;
  store: Store;
  log: Logger;
}

// What outlives a reload of this module (each reload evaluates it anew): the gateway serving now,
// the load under way, and the one config file watcher, which reloads whichever gateway is current.
interface DevState {
  current?: Loaded;
  loading?: Promise<void>;
  watching?: boolean;
}
const state: DevState = ((globalThis as { [key: symbol]: DevState })[Symbol.for("sluice.dev")] ??= {});

const configPath = resolve(process.env.SLUICE_CONFIG ?? "./config.json");
const loadConfig = () => loadConfigFile(configPath);
// one save can be two file events, and listhen loads this module again for each: loads take turns
const gateway = await afterEarlierLoads(replaceGateway);

export default toNodeHandler(gateway.app);

/** Builds the gateway from the config and these sources, in place of the one serving until now. */
async function replaceGateway(): Promise<Gateway> {
  const config = loadConfig();
  // the replaced gateway goes first (a bad config above leaves it serving): a SQLite file has one
  // holder at a time (src/store/sqlite-guard.ts), and the next gateway opens the same file
  const previous = state.current;
  state.current = undefined;
  if (previous) await retire(previous);
  const log = createLogger(config.server.log);
  const store = await openStore(config.store, { batchesDir: config.batches.dir });
  const gateway = createGateway(config, { store, loadConfig, logger: log });
  state.current = { gateway, store, log };
  if (!state.watching) {
    state.watching = true;
    watchConfigFile(configPath, () => void state.current?.gateway.reload(), log);
  }
  log.info({ config: configPath, store: config.store.driver }, previous ? "gateway rebuilt from the changed sources" : "gateway built (dev server)");
  return gateway;
}

/** Drains the replaced gateway (requests in flight finish, or are cut after RETIRE_MS), then
 *  releases its store, pools and log. */
async function retire(old: Loaded): Promise<void> {
  try {
    await old.gateway.drain(RETIRE_MS);
    await old.gateway.close();
    await old.store.close();
  } catch (err) {
    old.log.warn({ err }, "the replaced gateway did not close cleanly");
  } finally {
    await old.log.close();
  }
}

/** Runs `load` once every load begun before it has ended, failed ones included. */
async function afterEarlierLoads<T>(load: () => Promise<T>): Promise<T> {
  const earlier = state.loading;
  let ended!: () => void;
  state.loading = new Promise<void>((resolve) => (ended = resolve));
  try {
    await earlier;
    return await load();
  } finally {
    ended();
  }
}
