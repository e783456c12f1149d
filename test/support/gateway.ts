// Starts a real gateway on 127.0.0.1 (random port) for tests: raw config in, URL out.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import { parseConfig } from "../../src/config/load.js";
import type { Config } from "../../src/config/schema.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import type { Observer } from "../../src/observability/observer.js";
import type { ShareAuth } from "../../src/share/callbacks.js";
import { createStore } from "../../src/store/index.js";
import type { Store } from "../../src/store/types.js";

export interface StartedGateway {
  url: string;
  config: Config;
  gateway: Gateway;
  store: Store;
  server: Server;
  close(): Promise<void>;
}

export interface StartOptions {
  observerExtra?: Observer;
  shareAuth?: ShareAuth;
  /** a store to use instead of a fresh in-memory one (not closed by close()) */
  store?: Store;
  env?: NodeJS.ProcessEnv;
}

/** Silent logs unless the test config says otherwise; in-memory store unless one is given. */
export async function startGateway(rawConfig: unknown, opts: StartOptions = {}): Promise<StartedGateway> {
  const raw = rawConfig as Record<string, unknown>;
  const withDefaults = {
    ...raw,
    server: { log: { level: "silent" }, ...(raw.server as object | undefined) },
    store: raw.store ?? { driver: "memory" },
  };
  const config = parseConfig(withDefaults, opts.env ?? process.env);
  const store = opts.store ?? createStore(config.store);
  const gateway = createGateway(config, { store, observer: opts.observerExtra, shareAuth: opts.shareAuth });
  const server = createServer(toNodeHandler(gateway.app));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    gateway,
    store,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.close();
      if (!opts.store) await store.close();
    },
  };
}
