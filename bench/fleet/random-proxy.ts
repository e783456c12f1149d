// The routing floor of the fleet bench: each request to a replica drawn at random, as a gateway
// without affinity (weighted random per request) sends it; bytes piped both ways, nothing parsed.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream/promises";
import { Pool } from "undici";

export interface RandomProxy {
  url: string;
  close(): Promise<void>;
}

export async function startRandomProxy(replicaUrls: string[]): Promise<RandomProxy> {
  const pools = replicaUrls.map((url) => new Pool(url, { connections: 256 }));
  const server: Server = createServer((req, res) => {
    res.on("error", () => {});
    const pool = pools[Math.floor(Math.random() * pools.length)]!;
    void (async () => {
      const upstream = await pool.request({ path: req.url ?? "/", method: req.method as "POST", headers: { "content-type": "application/json" }, body: req });
      res.writeHead(upstream.statusCode, { "content-type": String(upstream.headers["content-type"] ?? "application/json") });
      await pipeline(upstream.body, res);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await Promise.all(pools.map((p) => p.close()));
    },
  };
}
