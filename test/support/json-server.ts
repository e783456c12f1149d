// A JSON model server on 127.0.0.1 for the tests of one kind (completions, embeddings, rerank): a
// POST whose path ends with the kind's suffix (whatever the query) is read whole and handed to the
// kind's `answer`; anything else is answered 404.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface JsonServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** Stops listening and destroys open connections, so it never waits on a held answer. */
  close(): Promise<void>;
}

export type JsonAnswer = (body: Record<string, unknown>, res: ServerResponse, req: IncomingMessage) => void;

export async function startJsonServer(suffix: string, answer: JsonAnswer): Promise<JsonServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || !new URL(req.url ?? "/", "http://x").pathname.endsWith(suffix)) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
        return;
      }
      answer(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>, res, req);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
