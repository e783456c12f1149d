// Starts a real gateway on 127.0.0.1 (random port) for tests: raw config in, URL out.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import type { ClusterState } from "../../src/cluster/types.js";
import { parseConfig } from "../../src/config/load.js";
import type { Config } from "../../src/config/schema.js";
import { createGateway, type Gateway, type GatewayDeps } from "../../src/gateway.js";
import { createHttpServer } from "../../src/http/server.js";
import type { Observer } from "../../src/observability/observer.js";
import type { ShareAuth } from "../../src/share/callbacks.js";
import type { Resolve } from "../../src/upstream/address-guard.js";
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
  /** the state shared with other instances (default: the gateway's own) */
  state?: ClusterState;
  /** what a reload swaps in (default: none, a reload fails) */
  loadConfig?: () => Config;
  /** the clock of quotas by time and key expiry */
  clock?: () => number;
  /** how channel hosts resolve (never real DNS in a test) */
  resolve?: Resolve;
  /** taps on every metered request, layers on every channel (docs/architecture.md#taps) */
  taps?: GatewayDeps["taps"];
  layers?: GatewayDeps["layers"];
}

/**
 * In-memory store unless one is given. Unless the test config sets its own log, every request is
 * logged at debug level to a temp file, and close() fails if that log or /metrics holds any
 * configured key: the whole suite's traffic is scanned for secrets this way.
 */
export async function startGateway(rawConfig: unknown, opts: StartOptions = {}): Promise<StartedGateway> {
  const raw = rawConfig as Record<string, unknown>;
  const server0 = (raw.server ?? {}) as Record<string, unknown>;
  const logDir = server0.log ? undefined : mkdtempSync(join(tmpdir(), "sluice-log-"));
  const withDefaults = {
    ...raw,
    server: { log: { level: "debug", destination: logDir ? join(logDir, "requests.log") : "stdout" }, ...server0 },
    store: raw.store ?? { driver: "memory" },
  };
  const config = parseConfig(withDefaults, opts.env ?? process.env);
  const store = opts.store ?? createStore(config.store);
  const gateway = createGateway(config, { store, observer: opts.observerExtra, shareAuth: opts.shareAuth, state: opts.state, loadConfig: opts.loadConfig, clock: opts.clock, resolve: opts.resolve, taps: opts.taps, layers: opts.layers });
  const server = createHttpServer(toNodeHandler(gateway.app), config.server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    gateway,
    store,
    server,
    async close() {
      const metrics = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: metricsAuth(config) }).then((r) => r.text());
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.close();
      if (!opts.store) await store.close();
      if (!logDir) return;
      const log = readFileSync(join(logDir, "requests.log"), "utf8");
      rmSync(logDir, { recursive: true, force: true });
      assertNoSecrets(config, { log, metrics });
    },
  };
}

function metricsAuth(config: Config): Record<string, string> {
  return config.server.metricsToken ? { authorization: `Bearer ${config.server.metricsToken}` } : {};
}

/** Every configured client key, channel key and metrics token: none may appear in `texts`. */
export function secretsOf(config: Config): string[] {
  return [
    ...config.apiKeys.map((k) => k.key),
    ...config.channels.map((c) => c.key),
    config.server.metricsToken,
  ].filter((s): s is string => typeof s === "string" && s.length >= 6);
}

export function assertNoSecrets(config: Config, texts: Record<string, string>): void {
  for (const [where, text] of Object.entries(texts)) {
    for (const secret of secretsOf(config)) {
      if (text.includes(secret)) throw new Error(`a configured key appears in the gateway's ${where}`);
    }
  }
}
