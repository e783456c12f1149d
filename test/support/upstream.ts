// A small real OpenAI-compatible upstream (node:http) for tests and the benchmark. It answers
// POST …/v1/chat/completions with deterministic text, records what it was sent, and misbehaves
// on demand (error status, delays, cut streams, hangs) through `behave()`.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** Put in every upstream error body and header: a gateway must never show it to its clients. */
export const UPSTREAM_SECRET = "upstream-secret-XYZ";

export interface UpstreamUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** vLLM's and SGLang's prefix-cache hits, when reported */
  prompt_tokens_details?: { cached_tokens: unknown };
}

export interface UpstreamBehaviour {
  /** The answer; a stream sends it split into `chunks` pieces. */
  text: string;
  chunks: number;
  /** Pause before each stream frame after the first. */
  chunkDelayMs: number;
  /** Pause before the status line. */
  firstByteDelayMs: number;
  /** 200 answers normally; anything else answers an OpenAI error body with this status. */
  status: number;
  /** Reported usage; `false` leaves `usage` out (non-stream) and sends no usage chunk (stream). */
  usage: UpstreamUsage | false;
  /** Destroy the socket after this many content chunks (non-stream: midway through the body). */
  cutAfterChunks: number | null;
  /** Read the request, then never answer. */
  hang: boolean;
  /** Report no more output than max_tokens × n allows (finish_reason "length" when cut to it), as a
   *  model server does; off: `usage` whatever was asked. */
  honourMaxTokens: boolean;
}

export interface UpstreamOptions extends Partial<UpstreamBehaviour> {
  /** Keep every request in `requests` (default true; the benchmark turns it off to stay bounded). */
  record?: boolean;
}

export interface UpstreamMessage {
  role: string;
  content: unknown;
  [key: string]: unknown;
}

/** The parsed JSON body as the gateway sent it; not validated, so fields may be missing. */
export interface UpstreamRequestBody {
  model: string;
  messages: UpstreamMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: UpstreamRequestBody;
}

export interface Upstream {
  /** `http://127.0.0.1:PORT`, without a trailing slash or `/v1`. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Throws when nothing was recorded yet. */
  last(): RecordedRequest;
  /** Change some behaviour from now on; the rest stays as it is. */
  behave(change: Partial<UpstreamBehaviour>): void;
  /** Back to the behaviour given at start, and forget recorded requests. */
  reset(): void;
  /** Resolves once `count` chat requests have arrived since start (or the last reset). */
  waitForRequests(count: number): Promise<void>;
  /**
   * Resolves when a chat request's connection is closed by the client before its answer was
   * complete. Each call consumes one such abort, so an abort that happened before the call counts.
   */
  waitForAbort(): Promise<void>;
  /** Same as `waitForAbort()`. */
  onRequestClosed(): Promise<void>;
  /** Stops listening and destroys open connections, so it never waits on a hanging request. */
  close(): Promise<void>;
}

/** What the upstream does unless told otherwise (tests may compare against `text` and `usage`). */
export const UPSTREAM_DEFAULTS: Readonly<UpstreamBehaviour> = Object.freeze({
  text: "Hello from the test upstream. This answer is the same every time.",
  chunks: 5,
  chunkDelayMs: 0,
  firstByteDelayMs: 0,
  status: 200,
  usage: Object.freeze({ prompt_tokens: 11, completion_tokens: 13 }),
  cutAfterChunks: null,
  hang: false,
  honourMaxTokens: false,
});

const CHAT_PATH = "/v1/chat/completions";
const CREATED = Math.floor(Date.now() / 1000);
const ID = "chatcmpl-upstream";
const MAX_CACHED_ANSWERS = 64;

export async function startUpstream(opts: UpstreamOptions = {}): Promise<Upstream> {
  const { record = true, ...initial } = opts;
  let current = withCache({ ...UPSTREAM_DEFAULTS, ...initial });
  const requests: RecordedRequest[] = [];
  const arrived = createCounter();
  const aborted = createCounter();
  let abortsConsumed = 0;
  const nextAbort = () => aborted.reach(++abortsConsumed);

  const server = createServer((req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 121_000;
  server.requestTimeout = 0; // `hang` and slow streams must not be cut by the server itself

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? "/";
    if (req.method === "GET" && path.endsWith("/v1/models")) return send(res, 200, '{"object":"list","data":[]}');
    if (req.method !== "POST" || !path.endsWith(CHAT_PATH)) return send(res, 404, errorBody("not found", url));

    const body = parseBody(await readBody(req));
    if (!body) return send(res, 400, errorBody("body is not JSON", url));
    if (record) requests.push({ method: req.method, path, headers: flattenHeaders(req), body });
    arrived.bump();

    // One request sees one behaviour (and its cache), even if a test changes it meanwhile.
    const { behaviour: b, cached } = honoured(current, body);
    let cut = false;
    const stop = new AbortController();
    res.on("close", () => {
      stop.abort();
      if (!res.writableFinished && !cut) aborted.bump();
    });
    if (b.hang) return;
    if (b.firstByteDelayMs > 0) await sleep(b.firstByteDelayMs, undefined, { signal: stop.signal });
    if (b.status !== 200) {
      res.setHeader("x-upstream-debug", UPSTREAM_SECRET);
      return send(res, b.status, errorBody(`upstream exploded: ${UPSTREAM_SECRET}`, url));
    }

    const model = typeof body.model === "string" ? body.model : "";
    const stream = body.stream === true;
    const withUsage = stream ? body.stream_options?.include_usage === true && b.usage !== false : b.usage !== false;
    const cutting = b.cutAfterChunks !== null;
    if (!stream && !cutting) return send(res, 200, cached(`n|${withUsage}|${model}`, () => completion(b, model)));

    res.writeHead(200, stream ? SSE_HEADERS : JSON_HEADERS);
    if (cutting) res.flushHeaders(); // the status arrives even when the cut comes before any chunk
    if (!stream) {
      const whole = completion(b, model);
      res.write(whole.slice(0, whole.length >> 1));
      cut = true;
      return void res.destroy();
    }
    if (!cutting && b.chunkDelayMs === 0) {
      return void res.end(cached(`s|${withUsage}|${model}`, () => Buffer.from(streamFrames(b, model, withUsage).join(""))));
    }
    const frames = streamFrames(b, model, withUsage);
    for (let i = 0; i < frames.length; i++) {
      if (i === b.cutAfterChunks) {
        cut = true;
        return void res.destroy();
      }
      if (i > 0 && b.chunkDelayMs > 0) await sleep(b.chunkDelayMs, undefined, { signal: stop.signal });
      res.write(frames[i]);
    }
    res.end();
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // A large backlog: the benchmark opens 1,000 streams at once through the gateway.
    server.listen({ host: "127.0.0.1", port: 0, backlog: 4096 }, resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    last() {
      const found = requests.at(-1);
      if (!found) throw new Error("the test upstream has recorded no request yet");
      return found;
    },
    behave(change) {
      current = withCache({ ...current.behaviour, ...change });
    },
    reset() {
      current = withCache({ ...UPSTREAM_DEFAULTS, ...initial });
      requests.length = 0;
      arrived.reset();
    },
    waitForRequests: (count) => arrived.reach(count),
    waitForAbort: nextAbort,
    onRequestClosed: nextAbort,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The behaviour for one request: with honourMaxTokens, output cut to what max_tokens × n allows
 *  (answered uncached, "length"). */
function honoured(current: ReturnType<typeof withCache>, body: UpstreamRequestBody): ReturnType<typeof withCache> {
  const b = current.behaviour;
  const allowed = typeof body.max_tokens === "number" ? body.max_tokens * (typeof body.n === "number" ? body.n : 1) : Number.POSITIVE_INFINITY;
  if (!b.honourMaxTokens || !b.usage || b.usage.completion_tokens <= allowed) return current;
  return withCache({ ...b, usage: { ...b.usage, completion_tokens: allowed }, finishReason: "length" });
}

/** A behaviour with its whole answers for the no-delay, no-cut case: no per-request JSON work. */
function withCache(behaviour: UpstreamBehaviour & { finishReason?: string }) {
  const answers = new Map<string, Buffer>();
  const cached = (key: string, build: () => Buffer | string): Buffer => {
    let hit = answers.get(key);
    if (!hit) {
      if (answers.size >= MAX_CACHED_ANSWERS) answers.clear();
      const built = build();
      hit = typeof built === "string" ? Buffer.from(built) : built;
      answers.set(key, hit);
    }
    return hit;
  };
  return { behaviour, cached };
}

const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

function send(res: ServerResponse, status: number, body: string | Buffer): void {
  res.writeHead(status, { ...JSON_HEADERS, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function errorBody(message: string, url: string): string {
  return JSON.stringify({
    error: { message: `${message} (${url}${CHAT_PATH})`, type: "server_error", code: "upstream_failure", param: null },
  });
}

function completion(b: UpstreamBehaviour & { finishReason?: string }, model: string): string {
  return JSON.stringify({
    id: ID,
    object: "chat.completion",
    created: CREATED,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: b.text }, finish_reason: b.finishReason ?? "stop" }],
    ...(b.usage === false ? {} : { usage: fullUsage(b.usage) }),
  });
}

/** The content chunks, then the stop chunk, the usage chunk when asked, and `[DONE]`. */
function streamFrames(b: UpstreamBehaviour & { finishReason?: string }, model: string, withUsage: boolean): string[] {
  const chunk = (choices: unknown[], extra: object = {}) =>
    `data: ${JSON.stringify({ id: ID, object: "chat.completion.chunk", created: CREATED, model, choices, ...extra })}\n\n`;
  const frames = splitText(b.text, b.chunks).map((piece, i) =>
    chunk([{ index: 0, delta: i === 0 ? { role: "assistant", content: piece } : { content: piece }, finish_reason: null }]),
  );
  frames.push(chunk([{ index: 0, delta: {}, finish_reason: b.finishReason ?? "stop" }]));
  if (withUsage && b.usage !== false) frames.push(chunk([], { usage: fullUsage(b.usage) }));
  frames.push("data: [DONE]\n\n");
  return frames;
}

function splitText(text: string, parts: number): string[] {
  const n = Math.max(1, Math.floor(parts));
  const size = Math.max(1, Math.ceil(text.length / n));
  return Array.from({ length: n }, (_, i) => text.slice(i * size, (i + 1) * size));
}

function fullUsage(u: UpstreamUsage) {
  return { ...u, total_tokens: u.prompt_tokens + u.completion_tokens };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
    req.on("error", reject);
  });
}

function parseBody(raw: Buffer): UpstreamRequestBody | undefined {
  try {
    const parsed: unknown = JSON.parse(raw.toString("utf8"));
    return parsed !== null && typeof parsed === "object" ? (parsed as UpstreamRequestBody) : undefined;
  } catch {
    return undefined;
  }
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/** A count that can be awaited: `reach(n)` resolves once `n` events have happened. */
function createCounter() {
  let count = 0;
  let waiters: { n: number; resolve: () => void }[] = [];
  return {
    bump() {
      count++;
      waiters = waiters.filter((w) => (w.n <= count ? (w.resolve(), false) : true));
    },
    reach(n: number): Promise<void> {
      return n <= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
    },
    reset() {
      count = 0;
    },
  };
}
