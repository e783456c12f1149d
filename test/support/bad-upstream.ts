// A deliberately broken OpenAI-compatible upstream for tests. It is a raw TCP server (node:net) so that
// every byte it sends, and where it stops, is its own choice. The request's last user message names
// the misbehaviour — "play <scenario> [n]" — and the answer takes the form the request asked for
// (an SSE stream for `stream: true`, JSON otherwise). Every answer closes its connection, and each one
// is recorded: what it played, how many bytes it sent and how it ended.
import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/** The normal answer's text, and its pieces as streamed. */
export const BAD_PIECES = ["Bad upstream ", "says hi."];
export const BAD_TEXT = BAD_PIECES.join("");
/** Put in every error this upstream sends: the gateway's clients must never see it. */
export const BAD_SECRET = "bad-upstream-internal-detail-7731";
/** A key-like string in its error messages: a gateway that passes a message on must redact it. */
export const LEAKY_KEY = "sk-leaky-0123456789abcdef";
export const HUGE_BYTES = 50 * 1024 * 1024;
export const DRIP_INTERVAL_MS = 100;

export type Ending =
  /** everything it meant to send was sent */
  | "finished"
  /** it cut the connection itself, as the scenario says */
  | "cut"
  /** the gateway closed the connection before the answer was complete */
  | "peer-closed";

export interface Played {
  scenario: string;
  arg: number;
  stream: boolean;
  model: string;
  bytes: number;
  ending: Ending | undefined;
  /** resolves when the connection is closed, however */
  closed: Promise<void>;
}

export interface BadUpstream {
  readonly url: string;
  readonly played: Played[];
  /** The whole normal answer as raw HTTP bytes: `stream` chunked SSE or JSON; `delimited`: ended by close. */
  normalAnswer(stream: boolean, model: string, delimited?: boolean): Buffer;
  close(): Promise<void>;
}

const CREATED = 1_700_000_000;
const REASONS: Record<number, string> = { 200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout" };

// ---------------------------------------------------------------------------------------------
// The bytes of answers.

function head(status: number, headers: Record<string, string | number>): string {
  const lines = Object.entries({ ...headers, connection: "close" }).map(([k, v]) => `${k}: ${v}\r\n`);
  return `HTTP/1.1 ${status} ${REASONS[status] ?? "Whatever"}\r\n${lines.join("")}\r\n`;
}
const SSE_HEAD = head(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "transfer-encoding": "chunked" });
const SSE_HEAD_DELIMITED = head(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
const chunked = (text: string | Buffer) => Buffer.concat([Buffer.from(`${Buffer.byteLength(text).toString(16)}\r\n`), Buffer.from(text), Buffer.from("\r\n")]);
const LAST_CHUNK = "0\r\n\r\n";
const jsonAnswer = (status: number, body: string | Buffer, extra: Record<string, string> = {}) =>
  Buffer.concat([Buffer.from(head(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...extra })), Buffer.from(body)]);

function chunkEvent(model: string, choices: unknown[], extra: object = {}): string {
  return `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", model, choices, ...extra })}\n\n`;
}

/** The SSE events of the normal answer: content pieces, the stop chunk, usage, [DONE]. */
function normalEvents(model: string): string[] {
  return [
    ...BAD_PIECES.map((piece, i) => chunkEvent(model, [{ index: 0, delta: i === 0 ? { role: "assistant", content: piece } : { content: piece }, finish_reason: null }])),
    chunkEvent(model, [{ index: 0, delta: {}, finish_reason: "stop" }]),
    chunkEvent(model, [], { usage: { prompt_tokens: 7, completion_tokens: 9, total_tokens: 16 } }),
    "data: [DONE]\n\n",
  ];
}

function completionJson(model: string, content = BAD_TEXT): string {
  return JSON.stringify({
    id: "chatcmpl-bad",
    object: "chat.completion",
    created: CREATED,
    model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 7, completion_tokens: 9, total_tokens: 16 },
  });
}

const sseAnswer = (events: Array<string | Buffer>, done = true) => Buffer.concat([Buffer.from(SSE_HEAD), ...events.map(chunked), ...(done ? [Buffer.from(LAST_CHUNK)] : [])]);
const errorJson = (message: string, type: string, code: string) => JSON.stringify({ error: { message: `${message} (${BAD_SECRET})`, type, code, param: null } });
const GARBAGE = Buffer.from([0x00, 0xff, 0xfe, 0x7b, 0x7b, 0x5b, 0x0d, 0x0a, 0x67, 0x61, 0x72, 0x62, 0x61, 0x67, 0x65, 0x0a, 0x0a, 0xc3, 0x28, 0x64, 0x61, 0x74, 0x61, 0x3a, 0x20, 0x7b, 0x0a, 0x0a]);

// ---------------------------------------------------------------------------------------------
// Scenarios: each writes one answer to the socket through `out`.

interface Out {
  stream: boolean;
  /** the Authorization header the gateway sent (the channel key): echoed in error bodies */
  authorization: string;
  model: string;
  arg: number;
  /** writes bytes, waiting for the socket to drain; false once the connection is gone */
  write(bytes: string | Buffer): Promise<boolean>;
  /** ends the answer normally (FIN after everything) */
  finish(): void;
  /** cuts the connection: FIN, or RST when `reset` */
  cut(reset: boolean): void;
  gone(): boolean;
}

type Scenario = (out: Out, normal: BadUpstream["normalAnswer"]) => Promise<void>;

const whole = (bytes: (o: Out) => Buffer): Scenario => async (o) => {
  if (await o.write(bytes(o))) o.finish();
};

const ERROR_EVENT = `data: ${errorJson("the model crashed mid-answer", "server_error", "overloaded")}\n\n`;

const SCENARIOS: Record<string, Scenario> = {
  ok: whole((o) => (o.stream ? sseAnswer(normalEvents(o.model)) : jsonAnswer(200, completionJson(o.model)))),
  "sse-error": whole((o) => (o.stream ? sseAnswer([normalEvents(o.model)[0]!, ERROR_EVENT]) : jsonAnswer(200, errorJson("the model crashed", "server_error", "overloaded")))),
  "sse-error-then-done": whole((o) => (o.stream ? sseAnswer([normalEvents(o.model)[0]!, ERROR_EVENT, "data: [DONE]\n\n"]) : jsonAnswer(200, errorJson("the model crashed", "server_error", "overloaded")))),
  "sse-error-first": whole((o) => (o.stream ? sseAnswer([ERROR_EVENT]) : jsonAnswer(200, `{"error":"${BAD_SECRET}"}`))),
  "bad-usage": whole((o) => {
    const events = normalEvents(o.model);
    events.splice(3, 1, 'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":7,"completion_tok\n\n');
    return o.stream ? sseAnswer(events) : jsonAnswer(200, completionJson(o.model).replace(/"usage":.*$/, '"usage":{"prompt_tokens":7,"completion_tok'));
  }),
  "truncated-event": whole((o) => {
    const events = normalEvents(o.model);
    events.splice(1, 1, 'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"says h\n\n');
    return o.stream ? sseAnswer(events) : jsonAnswer(200, completionJson(o.model).slice(0, 90));
  }),
  garbage: whole((o) => (o.stream ? sseAnswer([normalEvents(o.model)[0]!, GARBAGE, "data: [DONE]\n\n"]) : jsonAnswer(200, GARBAGE))),
  "garbage-then-close": whole((o) => (o.stream ? Buffer.concat([Buffer.from(SSE_HEAD), chunked(GARBAGE), Buffer.from(LAST_CHUNK)]) : jsonAnswer(200, Buffer.concat([Buffer.from('{"choices":['), GARBAGE])))),
  // Legal but unusual: the answer must come through whole.
  "blank-lines": whole((o) => (o.stream ? sseAnswer(normalEvents(o.model).map((e) => `${e}\n`)) : jsonAnswer(200, `\n ${completionJson(o.model)} \n`))),
  crlf: whole((o) => (o.stream ? sseAnswer(normalEvents(o.model).map((e) => e.replace(/\n/g, "\r\n"))) : jsonAnswer(200, completionJson(o.model)))),
  comments: whole((o) => (o.stream ? sseAnswer([": keep-alive\n\n", ...normalEvents(o.model).flatMap((e) => [e, ": ping\n\n"])]) : jsonAnswer(200, completionJson(o.model)))),
  "no-space": whole((o) => (o.stream ? sseAnswer(normalEvents(o.model).map((e) => e.replace(/^data: /, "data:"))) : jsonAnswer(200, completionJson(o.model)))),
  "split-events": async (o, normal) => {
    const answer = normal(o.stream, o.model);
    const bodyAt = answer.indexOf("\r\n\r\n") + 4;
    if (!(await o.write(answer.subarray(0, bodyAt)))) return;
    // pieces of 37 bytes, 5 ms apart: events (and UTF-8, and chunk framing) arrive split
    for (let i = bodyAt; i < answer.length; i += 37) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (!(await o.write(answer.subarray(i, i + 37)))) return;
    }
    o.finish();
  },
  "json-truncated": whole((o) => jsonAnswer(200, completionJson(o.model).slice(0, 60))),
  "json-garbage": whole(() => jsonAnswer(200, GARBAGE)),
  "json-empty": whole(() => jsonAnswer(200, "")),
  "json-not-completion": whole(() => jsonAnswer(200, '{"object":"list","data":[]}')),
  status: whole((o) => {
    const retry = o.arg === 429 ? { "retry-after": "7" } : ({} as Record<string, string>);
    const said = `upstream says no (HTTP ${o.arg}); you sent "${o.authorization}", and our key is ${LEAKY_KEY}`;
    return jsonAnswer(o.arg, errorJson(said, "invalid_request_error", `http_${o.arg}`), retry);
  }),
  // RST after `arg` bytes of the normal answer
  "reset-at": async (o, normal) => {
    if (await o.write(normal(o.stream, o.model).subarray(0, o.arg))) o.cut(true);
  },
  // FIN after `arg` bytes of the normal answer sent without a length (ended by the close alone)
  "fin-at": async (o, normal) => {
    if (await o.write(normal(o.stream, o.model, true).subarray(0, o.arg))) o.cut(false);
  },
  "hang-before-headers": async () => {},
  "hang-after-headers": async (o, normal) => {
    const answer = normal(o.stream, o.model);
    await o.write(answer.subarray(0, answer.indexOf("\r\n\r\n") + 4));
  },
  huge: (o) => playHuge(o, "lorem ipsum dolor sit amet, ".repeat(2400)),
  // the same, as one word: costly for a gateway whose token counting is not linear
  "huge-word": (o) => playHuge(o, "x".repeat(64 * 1024)),
  // the headers at once, then the body one byte per DRIP_INTERVAL_MS
  drip: async (o, normal) => {
    const answer = normal(o.stream, o.model);
    const bodyAt = answer.indexOf("\r\n\r\n") + 4;
    if (!(await o.write(answer.subarray(0, bodyAt)))) return;
    for (let i = bodyAt; i < answer.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, DRIP_INTERVAL_MS));
      if (o.gone() || !(await o.write(answer.subarray(i, i + 1)))) return;
    }
    o.finish();
  },
};

/** HUGE_BYTES of answer text, written as fast as the gateway reads it, in pieces of `piece`. */
async function playHuge(o: Out, piece: string): Promise<void> {
  if (o.stream) {
    if (!(await o.write(SSE_HEAD))) return;
    const event = chunked(chunkEvent(o.model, [{ index: 0, delta: { content: piece }, finish_reason: null }]));
    for (let sent = 0; sent < HUGE_BYTES; sent += piece.length) if (!(await o.write(event))) return;
    if (await o.write(Buffer.concat([...normalEvents(o.model).slice(BAD_PIECES.length).map(chunked), Buffer.from(LAST_CHUNK)]))) o.finish();
    return;
  }
  const [before, after] = completionJson(o.model, "§").split("§") as [string, string];
  const length = Buffer.byteLength(before) + HUGE_BYTES + Buffer.byteLength(after);
  if (!(await o.write(head(200, { "content-type": "application/json", "content-length": length }) + before))) return;
  const bytes = Buffer.from(piece);
  for (let sent = 0; sent < HUGE_BYTES; sent += bytes.length) if (!(await o.write(sent + bytes.length <= HUGE_BYTES ? bytes : bytes.subarray(0, HUGE_BYTES - sent)))) return;
  if (await o.write(after)) o.finish();
}

// ---------------------------------------------------------------------------------------------
// The server.

export async function startBadUpstream(): Promise<BadUpstream> {
  const played: Played[] = [];
  const sockets = new Set<Socket>();

  function normalAnswer(stream: boolean, model: string, delimited = false): Buffer {
    if (!stream) return delimited ? Buffer.from(head(200, { "content-type": "application/json" }) + completionJson(model)) : jsonAnswer(200, completionJson(model));
    return delimited ? Buffer.from(SSE_HEAD_DELIMITED + normalEvents(model).join("")) : sseAnswer(normalEvents(model));
  }

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {}); // the gateway may reset a connection it gave up on
    let buffered = Buffer.alloc(0);
    const onData = (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      const request = parseRequest(buffered);
      if (!request) return;
      socket.off("data", onData);
      void answer(socket, request);
    };
    socket.on("data", onData);
    socket.once("close", () => sockets.delete(socket));
  });

  async function answer(socket: Socket, request: { method: string; path: string; authorization: string; body: string }): Promise<void> {
    if (request.method === "GET" && request.path.endsWith("/v1/models")) {
      socket.end(jsonAnswer(200, '{"object":"list","data":[]}'));
      return;
    }
    const body = parseJson(request.body);
    const messages = Array.isArray(body?.messages) ? (body.messages as Array<{ role?: unknown; content?: unknown }>) : [];
    const said = String(messages.findLast((m) => m.role === "user")?.content ?? "");
    const [, name = "ok", arg = "0"] = /^play (\S+)(?: (\d+))?/.exec(said) ?? [];
    const scenario = SCENARIOS[name] ?? SCENARIOS.ok!;
    const record: Played = { scenario: name, arg: Number(arg), stream: body?.stream === true, model: String(body?.model ?? ""), bytes: 0, ending: undefined, closed: new Promise((resolve) => socket.once("close", () => resolve())) };
    played.push(record);
    void record.closed.then(() => (record.ending ??= "peer-closed"));
    const out: Out = {
      stream: record.stream,
      authorization: request.authorization,
      model: record.model,
      arg: record.arg,
      gone: () => socket.destroyed || record.ending !== undefined,
      async write(bytes) {
        if (out.gone()) return false;
        record.bytes += Buffer.byteLength(bytes);
        const flushed = new Promise<void>((resolve) => socket.write(bytes, () => resolve()));
        await Promise.race([flushed, record.closed]);
        return !out.gone();
      },
      finish() {
        record.ending ??= "finished";
        socket.end();
      },
      cut(reset) {
        record.ending ??= "cut";
        if (reset) socket.resetAndDestroy();
        else socket.end();
      },
    };
    await scenario(out, normalAnswer);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    played,
    normalAnswer,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A whole request from the bytes so far (Content-Length bodies only: what undici sends), else undefined. */
function parseRequest(bytes: Buffer): { method: string; path: string; authorization: string; body: string } | undefined {
  const end = bytes.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const lines = bytes.subarray(0, end).toString("latin1").split("\r\n");
  const [method = "", path = ""] = lines[0]!.split(" ");
  const length = Number(/^content-length:\s*(\d+)/im.exec(lines.join("\n"))?.[1] ?? 0);
  if (bytes.length < end + 4 + length) return undefined;
  const authorization = /^authorization:\s*(.*)$/im.exec(lines.join("\n"))?.[1] ?? "";
  return { method, path, authorization, body: bytes.subarray(end + 4, end + 4 + length).toString("utf8") };
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
