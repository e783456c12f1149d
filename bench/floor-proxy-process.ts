// Runs the floor proxy as its own process, so it gets a CPU of its own exactly as Sluice does.
// Usage: node --import tsx bench/floor-proxy-process.ts --upstream URL --key KEY --port N
import { parseArgs } from "node:util";
import { startFloorProxy } from "./floor-proxy.js";

const { values } = parseArgs({ options: { upstream: { type: "string" }, key: { type: "string" }, port: { type: "string" } } });
if (!values.upstream || !values.key) throw new Error("--upstream and --key are required");

const proxy = await startFloorProxy(values.upstream, values.key, Number(values.port ?? 0));
process.once("SIGTERM", () => void proxy.close().then(() => process.exit(0)));
