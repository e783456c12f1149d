// The bare pass-through proxy, the floor no Node proxy beats: node:http in, an undici Pool out.
// It forwards method, path and body bytes, swaps only Authorization, and pipes the answer back.
import { createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { pipeline } from "node:stream";
import { Pool, type Dispatcher } from "undici";

export interface FloorProxy {
  url: string;
  close(): Promise<void>;
}

// Connection-level headers belong to one hop; undici also rejects several of them outright.
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"]);

export async function startFloorProxy(upstreamUrl: string, channelKey: string, port = 0): Promise<FloorProxy> {
  const pool = new Pool(upstreamUrl, { keepAliveTimeout: 60_000 });
  const authorization = `Bearer ${channelKey}`;

  const server = createServer((req, res) => {
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
    });
    const headers = withoutHopByHop(req.headers) as Record<string, string | string[]>;
    headers.authorization = authorization;
    const method = (req.method ?? "GET") as Dispatcher.HttpMethod;
    const body = method === "GET" || method === "HEAD" ? null : req;
    pool
      .request({ method, path: req.url ?? "/", headers, body, signal: abort.signal })
      .then(
        ({ statusCode, headers: upstreamHeaders, body }) => {
          res.writeHead(statusCode, withoutHopByHop(upstreamHeaders));
          pipeline(body, res, () => {});
        },
        () => (res.headersSent ? res.destroy() : res.writeHead(502).end()),
      );
  });
  server.keepAliveTimeout = 60_000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port, backlog: 4096 }, resolve);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await Promise.all([closed, pool.destroy()]);
    },
  };
}

function withoutHopByHop(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}
