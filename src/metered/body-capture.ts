// The bodies FastGPT's log detail shows (docs/fastgpt.md#bodies), for the apps that keep them
// (`apps[].logBodies`): the request as received — its bytes, not its parse written out again — and
// the answer as sent — its bytes teed from the response as they are written, whole or streamed,
// errors too —, each read up to a bound, redacted (body-redact.ts), cut to
// `server.bodyLog.maxBytes`, and stored once the answer is over, off the request's path. They go to
// the store only: never to the request log, metrics or the usage API.
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import type { RequestFacts } from "../http/facts.js";
import { nodeResponse } from "../http/node.js";
import type { Store } from "../store/types.js";
import { cut, type BodyKind, type Redactor } from "./body-redact.js";

export interface BodyLogDeps {
  store: Pick<Store, "saveBodies">;
  /** every configured secret out (client keys given in plain, channel keys, the metrics token), and the caller's keys */
  redact: Redactor;
  maxBytes: number;
  retentionMs: number;
}

/** What redaction may shorten is read beyond the cut, up to this many times it. */
const READ_BEYOND = 4;
/** Headers a caller's key may come in (docs/fastgpt.md#redaction). */
const KEY_HEADERS = ["authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key"];
/** blanks and quotes: where a key in text or in JSON ends */
const WORD_ENDS = new Set([0x20, 0x09, 0x0a, 0x0d, 0x22, 0x27]);

/** Starts teeing the answer of a request whose app keeps bodies (`mode` errors or all). `request`:
 *  the body's bytes as read, or what the kind says an upload was. Returns the key the bodies will be
 *  stored by, for the usage row: an id made here — the client's x-request-id may be any other
 *  call's too (docs/fastgpt.md#bodies). */
export function captureBodies(event: H3Event, deps: BodyLogDeps, mode: "errors" | "all", request: Buffer | string, facts: RequestFacts, time: number): string | undefined {
  const res = nodeResponse(event);
  if (!res) return undefined;
  const key = randomUUID();
  const bound = deps.maxBytes * READ_BEYOND;
  // the request's head only, decoded now: the whole body is not held until the answer is over
  const requestOver = typeof request !== "string" && request.length > bound;
  const requestText = typeof request === "string" ? request : request.toString("utf8", 0, requestOver ? bound : request.length);
  const keys = callerKeys(event.req.headers);
  const answer = new Tee(res, bound);
  // "close" comes once, whether the answer ended or the client left
  res.once("close", () => {
    const type = String(res.getHeader("content-type") ?? "");
    const kind = kindOf(type);
    const response = kind ? answer.text() : `<${answer.bytes} bytes ${type || "unknown"}>`;
    const over = answer.over;
    answer.detach();
    // only a request that reached a model server has a usage row to show the bodies with
    if (!facts.channel || (mode === "errors" && res.statusCode === 200)) return;
    // redacted once the rest of the answer's end is done: nothing of the request waits for it
    setImmediate(() => {
      try {
        const [req, requestTruncated] = kept(deps.redact(requestText, "parsed", keys, !requestOver), requestOver, deps.maxBytes);
        const [resp, responseTruncated] = kept(kind ? deps.redact(response, kind, keys, !over) : response, over, deps.maxBytes);
        const saved = { key, time, request: req, response: resp, requestTruncated, responseTruncated, expiresAt: time + deps.retentionMs };
        // a body that could not be kept costs the request nothing
        void deps.store.saveBodies(saved).catch(() => {});
      } catch {
        // a body redaction could not read is not kept (never a request's failure, nor the process's)
      }
    });
  });
  return key;
}

/** The keys a request was sent with, in any of the headers keys come in: a header's value, and
 *  the credential after its scheme (`Bearer`, `Basic`'s password too). */
function callerKeys(headers: Headers): string[] {
  const keys: string[] = [];
  for (const name of KEY_HEADERS) {
    const value = headers.get(name)?.trim();
    if (!value) continue;
    const [scheme, credential] = value.split(/\s+/, 2);
    keys.push(credential ?? value);
    if (!credential) continue;
    if (/^basic$/i.test(scheme!)) keys.push(...Buffer.from(credential, "base64").toString("utf8").split(":"));
  }
  return keys;
}

/** How an answer of this content type is read; undefined: not text, kept as its size. */
function kindOf(type: string): BodyKind | undefined {
  if (/event-stream/i.test(type)) return "sse";
  if (/json/i.test(type)) return "json";
  return /text/i.test(type) ? "text" : undefined;
}

/** A body cut to `maxBytes`. One read only in part (`over`) loses its last word, which may be the
 *  head of a secret no pattern can tell, and is marked cut, ending `...`, however short redaction
 *  made it. */
function kept(text: string, over: boolean, maxBytes: number): [string, boolean] {
  if (!over) return cut(text, maxBytes);
  const whole = `${withoutLastWord(text)}...`;
  return Buffer.byteLength(whole) <= maxBytes ? [whole, true] : cut(whole, maxBytes);
}

/** The text up to its last blank or quote. */
function withoutLastWord(text: string): string {
  let end = text.length;
  while (end > 0 && !WORD_ENDS.has(text.charCodeAt(end - 1))) end--;
  return text.slice(0, end);
}

/** Keeps the first `limit` bytes written to the response: a string as it is (a whole JSON answer
 *  usually is one, encoded once, by the socket), bytes as they are. Detached once the response is
 *  closed: nothing of the request stays reachable from the response (an object V8 may have moved to
 *  the old generation, where it keeps what it points to until a full collection:
 *  docs/performance.md#large-bodies-and-the-old-generation). */
class Tee {
  #chunks: Array<Buffer | string> = [];
  #kept = 0;
  /** every byte written, kept or not */
  bytes = 0;
  readonly #res: ServerResponse;
  readonly #write: ServerResponse["write"];
  readonly #end: ServerResponse["end"];

  constructor(
    res: ServerResponse,
    private readonly limit: number,
  ) {
    this.#res = res;
    const write = (this.#write = res.write);
    const end = (this.#end = res.end);
    res.write = ((...args: unknown[]) => (this.#keep(args[0], args[1]), (write as (...a: unknown[]) => boolean).apply(res, args))) as ServerResponse["write"];
    res.end = ((...args: unknown[]) => (this.#keep(args[0], args[1]), (end as (...a: unknown[]) => ServerResponse).apply(res, args))) as ServerResponse["end"];
  }

  /** whether more was written than kept */
  get over(): boolean {
    return this.bytes > this.#kept;
  }

  /** What was kept, decoded: bytes joined before they are decoded (a character may be split between two writes). */
  text(): string {
    const chunks = this.#chunks;
    return chunks.length === 1 ? chunks[0]!.toString() : Buffer.concat(chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c))).toString("utf8");
  }

  /** The response's own write and end back, and what was kept let go. */
  detach(): void {
    this.#res.write = this.#write;
    this.#res.end = this.#end;
    this.#chunks = [];
  }

  #keep(chunk: unknown, encoding?: unknown): void {
    if (chunk === undefined || chunk === null || typeof chunk === "function") return;
    const utf8 = typeof chunk === "string" && (typeof encoding !== "string" || /^utf-?8$/i.test(encoding));
    const part = utf8 ? chunk : Buffer.isBuffer(chunk) ? chunk : typeof chunk === "string" ? Buffer.from(chunk, encoding as BufferEncoding) : Buffer.from(chunk as Uint8Array);
    const length = typeof part === "string" ? Buffer.byteLength(part) : part.length;
    this.bytes += length;
    if (this.#kept >= this.limit) return;
    const room = this.limit - this.#kept;
    this.#chunks.push(length <= room ? part : (typeof part === "string" ? Buffer.from(part) : part).subarray(0, room));
    this.#kept += Math.min(length, room);
  }
}
