// Entry: loads the config, opens the store, builds the gateway and listens with listhen.
// `npm start -- --config PATH --port N`, or env SLUICE_CONFIG / PORT. SIGTERM and SIGINT drain
// in-flight requests, send queued share-link reports, then close the store.
import { parseArgs } from "node:util";
import { toNodeHandler } from "h3/node";
import { listen } from "listhen";
import { ConfigError, loadConfigFile } from "./config/load.js";
import { createGateway } from "./gateway.js";
import { createStore } from "./store/index.js";

const SHUTDOWN_GRACE_MS = 30_000;

async function main(): Promise<void> {
  // 1. Arguments and environment.
  const { values } = parseArgs({ options: { config: { type: "string" }, port: { type: "string" } }, strict: true });
  const configPath = values.config ?? process.env.SLUICE_CONFIG ?? "./config.json";
  const config = loadConfigFile(configPath);
  const portText = values.port ?? process.env.PORT;
  if (portText !== undefined) {
    const port = Number(portText);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ConfigError("--port", [`port must be 1-65535, got ${JSON.stringify(portText)}`]);
    config.server.port = port;
  }

  // 2. The store and the gateway.
  const store = createStore(config.store);
  const gateway = createGateway(config, { store });

  // 3. Listen. autoClose: false, because listhen's own SIGTERM exit would skip the drain below.
  const host = config.server.host;
  const listener = await listen(toNodeHandler(gateway.app), {
    port: config.server.port,
    hostname: host,
    public: !["127.0.0.1", "localhost", "::1"].includes(host),
    isProd: true, // the configured port or an error, never a silently different port
    showURL: false,
    qr: false,
    autoClose: false,
  });
  console.log(`[sluice] listening on ${listener.url} (config ${configPath}, store ${config.store.driver})`);

  // 4. Graceful shutdown.
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    console.log(`[sluice] ${signal}: draining`);
    const force = setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    await listener.close();
    await gateway.close();
    await store.close();
    clearTimeout(force);
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) console.error(`[sluice] ${err.message}`);
  else console.error("[sluice] failed to start:", err instanceof Error ? err.message : err);
  process.exit(1);
});
