// The bodies FastGPT's log detail shows (docs/fastgpt.md#bodies), for the apps that keep them
// (`apps[].logBodies`): the request as received — its bytes, not its parse written out again — and
// the answer as sent — its bytes as the pipeline's writer writes them (a tap, ./taps.ts), whole or
// streamed, errors too —, each read up to a bound, redacted (body-redact.ts), cut to
// `server.bodyLog.maxBytes`, and stored once the answer is over, off the request's path. They go to
// the store only: never to the request log, metrics or the usage API.
import { randomUUID } from "node:crypto";
import type { Store } from "../store/types.js";
import { cut, type BodyKind, type Redactor } from "./body-redact.js";
import type { MeteredRequest, Probe, Tap } from "./taps.js";

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

/** The body tap: for a request whose app keeps bodies (`logBodies` errors or all), the request as
 *  received and the answer as written, stored once the answer is over under a key made here (the
 *  usage row names it) — the client's x-request-id may be any other call's too (docs/fastgpt.md#bodies).
 *  Sits out every request when no app keeps bodies. */
export function bodyTap(deps: BodyLogDeps, apps: Iterable<{ logBodies: "off" | "errors" | "all" }>): Tap {
  const any = [...apps].some((a) => a.logBodies !== "off");
  return { open: () => (any ? new BodyProbe(deps) : undefined) };
}

class BodyProbe implements Probe {
  #request: MeteredRequest | undefined;
  #mode: "errors" | "all" = "all";
  #requestText = "";
  #requestOver = false;
  #keys: string[] = [];
  #answer: Keeper | undefined;
  #key = "";

  constructor(private readonly deps: BodyLogDeps) {}

  identified(request: MeteredRequest): boolean {
    const mode = request.caller.app.logBodies;
    if (mode === "off") return false;
    this.#request = request;
    this.#mode = mode;
    const bound = this.deps.maxBytes * READ_BEYOND;
    // the request's head only, decoded now: the whole body is not held until the answer is over
    const text = request.requestText();
    this.#requestOver = typeof text !== "string" && text.length > bound;
    this.#requestText = typeof text === "string" ? text : text.toString("utf8", 0, this.#requestOver ? bound : text.length);
    this.#keys = callerKeys(request.inbound.headers);
    this.#answer = new Keeper(bound);
    this.#key = request.bodiesKey = randomUUID();
    return true;
  }

  written(chunk: string | Buffer): void {
    this.#answer?.keep(chunk);
  }

  answered(status: number, type: string): void {
    const answer = this.#answer;
    const request = this.#request;
    if (!answer || !request) return;
    const kind = kindOf(type);
    const response = kind ? answer.text() : `<${answer.bytes} bytes ${type || "unknown"}>`;
    const over = answer.over;
    this.#answer = undefined;
    // only a request that reached a model server has a usage row to show the bodies with
    if (!request.facts.channel || (this.#mode === "errors" && status === 200)) return;
    const { deps } = this;
    const keys = this.#keys;
    const requestText = this.#requestText;
    const requestOver = this.#requestOver;
    const { time } = request;
    const key = this.#key;
    this.#requestText = "";
    this.#keys = [];
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
  }
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

/** Keeps the first `limit` bytes of an answer: a string as it is (a whole JSON answer usually is
 *  one), bytes as they are. Let go once the answer is over: nothing of the request stays reachable
 *  (docs/performance.md#large-bodies-and-the-old-generation). */
class Keeper {
  #chunks: Array<Buffer | string> = [];
  #kept = 0;
  /** every byte written, kept or not */
  bytes = 0;

  constructor(private readonly limit: number) {}

  /** whether more was written than kept */
  get over(): boolean {
    return this.bytes > this.#kept;
  }

  /** What was kept, decoded: bytes joined before they are decoded (a character may be split between two writes). */
  text(): string {
    const chunks = this.#chunks;
    this.#chunks = [];
    return chunks.length === 1 ? chunks[0]!.toString() : Buffer.concat(chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c))).toString("utf8");
  }

  keep(part: string | Buffer): void {
    const length = typeof part === "string" ? Buffer.byteLength(part) : part.length;
    this.bytes += length;
    if (this.#kept >= this.limit) return;
    const room = this.limit - this.#kept;
    this.#chunks.push(length <= room ? part : (typeof part === "string" ? Buffer.from(part) : part).subarray(0, room));
    this.#kept += Math.min(length, room);
  }
}
