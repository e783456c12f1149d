// A recording pass-through (node:http on 127.0.0.1) between a real client and the gateway: every
// request is forwarded as it came, its answer piped back as it streams, and what passed is kept —
// path, query, the client's headers (keys redacted), its parsed body, the gateway's status and
// headers, and when each request came. For the tests of clients the test cannot instrument (the
// Claude Code and Codex CLIs): what they sent, how often they retried, after how long. Key headers
// are redacted, and any of `secrets` masked wherever it appears in a header.
import { createServer, request, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface Passed {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  /** the parsed JSON body (the raw text when not JSON; undefined when empty) */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read the clients' bodies freely
  body: any;
  /** the gateway's answer (absent while it has not answered) */
  status?: number;
  answerHeaders?: IncomingHttpHeaders;
  /** ms since the proxy started */
  at: number;
}

export interface RecordingProxy {
  url: string;
  readonly passed: Passed[];
  /** the same requests, under the name the Codex tests use */
  readonly calls: Passed[];
  /** the requests to a path, query ignored */
  to(path: string): Passed[];
  close(): Promise<void>;
}

const KEY_HEADERS = new Set(["x-api-key", "authorization"]);

export async function startRecordingProxy(target: string, secrets: string[] = []): Promise<RecordingProxy> {
  const mask = (text: string) => secrets.reduce((t, secret) => t.replaceAll(secret, "<secret>"), text);
  const to = new URL(target);
  const passed: Passed[] = [];
  const started = performance.now();
  const server = createServer((req, res) => {
    const at = performance.now() - started;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => res.destroy());
    res.on("error", () => undefined);
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const [path, query = ""] = (req.url ?? "/").split("?");
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, KEY_HEADERS.has(k) && secrets.length === 0 ? "<redacted>" : mask(String(v))]));
      const entry: Passed = { method: req.method ?? "GET", path: path!, query, headers, body: parse(raw), at };
      passed.push(entry);
      const out = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        entry.status = answer.statusCode;
        entry.answerHeaders = answer.headers;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on("error", () => res.destroy());
      });
      out.on("error", () => res.destroy());
      out.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    passed,
    calls: passed,
    to: (path) => passed.filter((p) => p.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function parse(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  const text = raw.toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
