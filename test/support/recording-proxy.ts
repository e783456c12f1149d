// A recording HTTP proxy on 127.0.0.1 in front of the gateway: each request is recorded as the
// client sent it (method, path, headers, the parsed JSON body) and passed on unchanged, the answer
// streamed back as it comes. For checking what a real client (Codex, the SDKs) sends to the gateway.
// Configured secrets are masked in what is recorded, so an assertion's message never shows a key.
import { createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

export interface ProxiedCall {
  method: string;
  path: string;
  /** lower-case names; every secret replaced by `<secret>` */
  headers: Record<string, string>;
  /** the parsed JSON body; undefined when there was none */
  body: any;
}

export interface RecordingProxy {
  /** http://127.0.0.1:PORT (add the gateway's paths, e.g. /v1) */
  url: string;
  readonly calls: ProxiedCall[];
  close(): Promise<void>;
}

export async function startRecordingProxy(target: string, secrets: string[]): Promise<RecordingProxy> {
  const calls: ProxiedCall[] = [];
  const to = new URL(target);
  const mask = (text: string) => secrets.reduce((t, s) => t.replaceAll(s, "<secret>"), text);
  const server = createServer((req, res) => {
    void readAll(req).then((body) => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, mask(String(v))]));
      calls.push({ method: req.method ?? "", path: req.url ?? "", headers, body: body.length ? JSON.parse(body.toString("utf8")) : undefined });
      const out = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on("error", () => res.destroy());
      });
      out.on("error", () => res.destroy());
      out.end(body);
    }, () => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
