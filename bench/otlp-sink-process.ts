// The tracing section's collector (bench/tracing.ts): an OTLP/HTTP endpoint in a process of its own,
// so that taking the spans costs neither Sluice's CPU nor the load generator's. It reads each body,
// discards it and answers 200 `{}` (an OTLP success); GET /stats tells how many posts and bytes came.
// Usage: node .bench-out/otlp-sink-process.js --port N
import { createServer } from "node:http";
import { parseArgs } from "node:util";

const stats = { posts: 0, bytes: 0 };

const server = createServer((req, res) => {
  res.on("error", () => {});
  if (req.method !== "POST") {
    req.resume();
    const body = req.url === "/stats" ? JSON.stringify(stats) : "{}";
    return void res.writeHead(200, { "content-type": "application/json" }).end(body);
  }
  req.on("data", (part: Buffer) => (stats.bytes += part.length));
  req.on("end", () => {
    stats.posts++;
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});
server.keepAliveTimeout = 60_000;

const { values } = parseArgs({ options: { port: { type: "string" } } });
server.listen({ host: "127.0.0.1", port: Number(values.port ?? 0) });
process.once("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
