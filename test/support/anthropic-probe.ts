// A small recording Anthropic Messages server (node:http on 127.0.0.1) for probing what real
// clients — the Anthropic SDK and the Claude Code CLI — send and what they accept. Each request is
// recorded (keys redacted) and answered by the test's script: a JSON body, an SSE text, an error
// status, or a cut connection.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ProbeRequest {
  method: string;
  /** the path without its query */
  path: string;
  /** the query string without "?" ("" when none) */
  query: string;
  /** header names in lower case; the key headers' values replaced by "<redacted>" */
  headers: Record<string, string>;
  /** the parsed JSON body, or the raw text when it is not JSON, or undefined when empty */
  body: unknown;
  /** ms since the server started */
  at: number;
}

export type ProbeReply =
  | { kind: "json"; status?: number; headers?: Record<string, string>; body: unknown }
  | { kind: "sse"; status?: number; headers?: Record<string, string>; text: string; /** destroy the socket after writing */ cut?: boolean }
  | { kind: "destroy" };

/** Answers the `n`th request (0-based, counted over every request the server got). */
export type ProbeScript = (req: ProbeRequest, n: number) => ProbeReply | Promise<ProbeReply>;

export interface Probe {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  readonly requests: ProbeRequest[];
  /** the recorded requests to a path (query ignored) */
  to(path: string): ProbeRequest[];
  close(): Promise<void>;
}

const KEY_HEADERS = new Set(["x-api-key", "authorization"]);

export async function startProbe(script: ProbeScript): Promise<Probe> {
  const requests: ProbeRequest[] = [];
  const started = performance.now();
  const server = createServer((req, res) => {
    void handle(req, res);
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.on("error", () => res.destroy());
    res.on("error", () => undefined);
    const recorded = await record(req, performance.now() - started);
    const n = requests.push(recorded) - 1;
    let reply: ProbeReply;
    try {
      reply = await script(recorded, n);
    } catch (err) {
      reply = { kind: "json", status: 500, body: { type: "error", error: { type: "api_error", message: String(err) } } };
    }
    send(res, reply);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function record(req: IncomingMessage, at: number): Promise<ProbeRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString("utf8");
  let body: unknown = raw.length > 0 ? raw : undefined;
  try {
    if (raw.length > 0) body = JSON.parse(raw);
  } catch {
    // not JSON: kept as text
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers[name] = KEY_HEADERS.has(name) ? "<redacted>" : Array.isArray(value) ? value.join(", ") : value;
  }
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  return { method: req.method ?? "", path: q < 0 ? url : url.slice(0, q), query: q < 0 ? "" : url.slice(q + 1), headers, body, at };
}

function send(res: ServerResponse, reply: ProbeReply): void {
  if (reply.kind === "destroy") {
    res.destroy();
    return;
  }
  if (reply.kind === "json") {
    res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
    res.end(JSON.stringify(reply.body));
    return;
  }
  res.writeHead(reply.status ?? 200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers });
  if (reply.cut) {
    res.write(reply.text, () => res.destroy());
    return;
  }
  res.end(reply.text);
}

/** An Anthropic error reply: `{type: "error", error: {type, message}}`. */
export function errorReply(status: number, type: string, message: string, headers: Record<string, string> = {}): ProbeReply {
  return { kind: "json", status, headers, body: { type: "error", error: { type, message } } };
}

/** SSE text of `[event, data]` pairs as Anthropic writes them. */
export function sseText(events: Array<[string, unknown]>): string {
  return events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join("");
}
