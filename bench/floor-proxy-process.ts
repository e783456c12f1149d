// Runs the floor proxy as its own process, so it gets a CPU of its own exactly as Sluice does.
// Usage: node .bench-out/floor-proxy-process.js --upstream URL --key KEY --port N
import { parseArgs } from "node:util";
import { createFloorProxy } from "./floor-proxy.js";

const { values } = parseArgs({ options: { upstream: { type: "string" }, key: { type: "string" }, port: { type: "string" } } });
if (!values.upstream || !values.key) throw new Error("--upstream and --key are required");

const server = createFloorProxy(values.upstream, values.key);
server.keepAliveTimeout = 60_000;
server.listen({ host: "127.0.0.1", port: Number(values.port ?? 0), backlog: 8192 });
process.once("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
