// A real operator identity server for tests (docs/api.md#identity-callbacks): records every callback,
// checks its method, path, headers and body, and answers as each token's mode says.
import { EventEmitter, once } from "node:events";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** How the server answers init and start for a token (default: success with uid "u-" + token). */
export type OperatorMode =
  | { kind: "success"; uid?: string | null } // uid null: a start reply without data.uid
  | { kind: "reject"; message?: string; msg?: string }
  | { kind: "bad-uid" }
  | { kind: "slow" } // never answers until the server closes
  | { kind: "not-json" };

export interface OperatorCall {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface OperatorServer {
  /** root address, i.e. the link's authHost (may carry a path prefix) */
  url: string;
  calls: OperatorCall[];
  /** every way a callback broke the contract; tests expect it empty */
  violations: string[];
  setMode(token: string, mode: OperatorMode): void;
  /** start callbacks whose question contains `word` are refused with `message` */
  blockWord(word: string, message: string): void;
  /** the next `times` finish callbacks get a 500 */
  failFinish(times: number): void;
  /** finish callbacks are held unanswered (until `slowFinish(false)` or close) */
  slowFinish(on: boolean): void;
  /** resolves once `n` finish callbacks have arrived (answered or not) */
  waitForFinish(n: number): Promise<OperatorCall[]>;
  callsTo(path: string): OperatorCall[];
  close(): Promise<void>;
}

const PATHS = ["/shareAuth/init", "/shareAuth/start", "/shareAuth/finish"] as const;
const BODY_KEYS: Record<(typeof PATHS)[number], string[]> = {
  "/shareAuth/init": ["token"],
  "/shareAuth/start": ["question", "token"],
  "/shareAuth/finish": ["appName", "responseData", "token"],
};

export async function startOperatorServer(opts: { prefix?: string } = {}): Promise<OperatorServer> {
  const prefix = opts.prefix ?? "";
  const calls: OperatorCall[] = [];
  const violations: string[] = [];
  const modes = new Map<string, OperatorMode>();
  const blocked = new Map<string, string>();
  const events = new EventEmitter();
  let held: ServerResponse[] = [];
  let finishFailures = 0;
  let finishSlow = false;

  const server = createServer(async (req, res) => {
    // decoded once whole: a character split across two chunks stays one character
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const path = (req.url ?? "").startsWith(prefix) ? (req.url ?? "").slice(prefix.length) : (req.url ?? "");
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = raw;
    }
    const call: OperatorCall = { path, method: req.method ?? "", headers: req.headers, body };
    calls.push(call);
    violations.push(...checkCall(call));
    events.emit("call", call);
    answer(call, res);
  });

  function answer(call: OperatorCall, res: ServerResponse) {
    const body = (call.body ?? {}) as { token?: string; question?: string };
    if (call.path === "/shareAuth/finish") {
      if (finishSlow) return void held.push(res);
      if (finishFailures > 0) {
        finishFailures--;
        return sendJson(res, 500, { success: false, message: "try later" });
      }
      return sendJson(res, 200, { success: true });
    }
    const word = [...blocked.keys()].find((w) => call.path === "/shareAuth/start" && body.question?.includes(w));
    if (word !== undefined) return sendJson(res, 200, { success: false, message: blocked.get(word) });
    const token = String(body.token);
    const mode = modes.get(token) ?? { kind: "success" };
    switch (mode.kind) {
      case "success":
        return sendJson(res, 200, mode.uid === null ? { success: true } : { success: true, data: { uid: mode.uid ?? `u-${token}` } });
      case "reject":
        return sendJson(res, 200, { success: false, message: mode.message, msg: mode.msg, data: { secret: "internal-detail" } });
      case "bad-uid":
        return sendJson(res, 200, { success: true, data: { uid: "bad/uid" } });
      case "slow":
        return void held.push(res);
      case "not-json":
        res.writeHead(200, { "content-type": "text/html" }).end("<html>gateway error</html>");
    }
  }

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const finishes = () => calls.filter((c) => c.path === "/shareAuth/finish");
  let closed = false;

  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    calls,
    violations,
    setMode: (token, mode) => void modes.set(token, mode),
    blockWord: (word, message) => void blocked.set(word, message),
    failFinish: (times) => void (finishFailures = times),
    slowFinish(on) {
      finishSlow = on;
      if (on) return;
      held.forEach((res) => sendJson(res, 200, { success: true }));
      held = [];
    },
    waitForFinish(n) {
      return new Promise((resolve) => {
        const check = () => {
          if (finishes().length < n) return;
          events.off("call", check);
          resolve(finishes());
        };
        events.on("call", check);
        check();
      });
    },
    callsTo: (path) => calls.filter((c) => c.path === path),
    async close() {
      if (closed) return;
      closed = true;
      held.forEach((res) => res.destroy());
      held = [];
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

function checkCall(call: OperatorCall): string[] {
  const problems: string[] = [];
  const where = `${call.method} ${call.path}`;
  if (call.method !== "POST") problems.push(`${where}: method is not POST`);
  if (!PATHS.includes(call.path as (typeof PATHS)[number])) return [...problems, `${where}: unknown path`];
  if (call.headers.authorization !== undefined) problems.push(`${where}: carries an Authorization header`);
  if (!String(call.headers["content-type"]).startsWith("application/json")) problems.push(`${where}: not JSON`);
  const body = call.body as Record<string, unknown>;
  const keys = typeof body === "object" && body !== null ? Object.keys(body).sort() : [];
  const expected = BODY_KEYS[call.path as (typeof PATHS)[number]];
  if (keys.join() !== expected.join()) problems.push(`${where}: body keys ${keys.join()} (expected ${expected.join()})`);
  if (typeof body?.token !== "string") problems.push(`${where}: token is not a string`);
  if ("question" in (body ?? {}) && typeof body.question !== "string") problems.push(`${where}: question is not a string`);
  if ("responseData" in (body ?? {}) && !Array.isArray(body.responseData)) problems.push(`${where}: responseData is not an array`);
  return problems;
}
