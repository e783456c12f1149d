// The floor: the cheapest correct pass-through, which no Node proxy beats. node:http in, the body
// buffered, one undici `Pool.request` out with the channel key, status and the two headers a client
// needs, the answer's bytes piped back; a client that leaves aborts the upstream request.
import { createServer, type Server } from "node:http";
import { pipeline } from "node:stream";
import { Pool, type Dispatcher } from "undici";

export function createFloorProxy(upstreamUrl: string, channelKey: string): Server {
  const pool = new Pool(upstreamUrl, { keepAliveTimeout: 60_000 });
  const headers = { "content-type": "application/json", authorization: `Bearer ${channelKey}` };
  return createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const body = parts.length === 0 ? null : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      const method = req.method as Dispatcher.HttpMethod;
      pool.request({ method, path: req.url ?? "/", headers, body }).then(
        (up) => {
          const length = up.headers["content-length"] as string | undefined;
          const type = (up.headers["content-type"] as string | undefined) ?? "application/json";
          res.writeHead(up.statusCode, length === undefined ? { "content-type": type } : { "content-type": type, "content-length": length });
          pipeline(up.body, res, () => {}); // a closed client destroys the body, which aborts upstream
        },
        () => res.writeHead(502).end(),
      );
    });
  });
}
