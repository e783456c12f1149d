// Large chat bodies without their long texts copied into JavaScript strings. A message's `content`
// string of LONG_TEXT bytes or more, in a body of LARGE_BODY bytes or more, stays in the body's
// buffer as a RawText: its exact UTF-8 length is known from one scan of the bytes, it reaches the
// model as the client's own bytes, and it becomes a string only where something reads it (counting,
// a stored conversation, a report); one of more than a few hundred KB is decoded by the parse in
// pieces (json/slices.ts), so that no read of it is a long step. The rest of the body is parsed as ever.
// Why: V8 gives every string over 128 KB pages of its own, mapped and unmapped by the kernel; a
// 200 KB prompt made three (the body's text, the parsed content, the upstream body) and paid more
// for them than for everything else the gateway does with the request.
import { randomBytes } from "node:crypto";
import { isUtf8 } from "node:buffer";
import { COLON, JsonScanner, QUOTE, skipSpace } from "./scan.js";
import type { JsonPath, LongString } from "./slices.js";

/** bodies smaller than this are parsed as a whole (./body-parse.ts): their strings are cheap */
export const LARGE_BODY = 64 * 1024;
/** a message content at least this long stays raw */
export const LONG_TEXT = 16 * 1024;

/** A JSON string of the request body, kept as the bytes the client sent, until its request is over. */
export class RawText {
  #text: string | undefined;
  #buf: Buffer | undefined;

  constructor(
    buf: Buffer,
    /** the opening quote */
    readonly start: number,
    /** after the closing quote */
    readonly end: number,
    /** the UTF-8 length of the decoded string */
    readonly bytes: number,
    private readonly escaped: boolean,
    /** the text, when the parse decoded it already (a string too long to decode in one step) */
    text?: string,
  ) {
    this.#buf = buf;
    this.#text = text;
  }

  /** The decoded string (made once, on first use). */
  text(): string {
    if (this.#text !== undefined) return this.#text;
    const buf = this.#body();
    this.#text = this.escaped ? (JSON.parse(buf.toString("utf8", this.start, this.end)) as string) : buf.toString("utf8", this.start + 1, this.end - 1);
    return this.#text;
  }

  /** The text's UTF-8 bytes: the client's own where it escaped nothing, else the decoded text encoded. */
  utf8(): Uint8Array {
    return this.escaped ? Buffer.from(this.text()) : this.#body().subarray(this.start + 1, this.end - 1);
  }

  /** The JSON string literal as the client sent it, quotes included. */
  literal(): Buffer {
    return this.#body().subarray(this.start, this.end);
  }

  /** Its request is over: the body's bytes are let go (releaseRawTexts). */
  release(): void {
    this.#buf = undefined;
  }

  #body(): Buffer {
    if (!this.#buf) throw new Error("A raw text was read after its request was over.");
    return this.#buf;
  }

  // anything that serializes or prints it without knowing it gets the decoded string
  toJSON(): string {
    return this.text();
  }
  toString(): string {
    return this.text();
  }
}

/**
 * A request over, its body's raw texts let go of the body's bytes. Why: V8 moves long-lived object
 * literals' allocations to the old generation (allocation-site pretenuring), and an old object that
 * dies keeps what it points to alive until the next full collection; a request's objects that point
 * at its raw texts would then keep the 200 KB body through two scavenges, promote it, and make a
 * mark-compact every few hundred such requests (docs/performance.md#large-bodies-and-the-old-generation).
 */
export function releaseRawTexts(body: unknown): void {
  const messages = (body as { messages?: unknown } | null)?.messages;
  if (!Array.isArray(messages)) return;
  for (const m of messages) {
    const content = (m as { content?: unknown } | null)?.content;
    if (content instanceof RawText) content.release();
  }
}

const nonce = randomBytes(12).toString("hex");
/** A string no client can send: stands for raw text `k` while the rest of the payload is serialized. */
const marker = (k: number) => `\u0000sluice:${nonce}:${k}`;

export type LargeBodyScan = { value: unknown } | { tooDeep: true } | undefined;

/**
 * A large body under PIECES_BODY (./body-parse.ts), parsed whole, with its long message contents left
 * raw; `tooDeep` past `maxDepth`; undefined when the body is to be parsed as a whole instead (small,
 * no long content, not valid UTF-8, dense with escapes, or not valid JSON: the whole parse then gives
 * the client its error).
 */
export function scanLargeBody(buf: Buffer, maxDepth: number): LargeBodyScan {
  if (buf.length < LARGE_BODY || !mayHoldLongString(buf) || !isUtf8(buf)) return undefined;
  const raws: RawText[] = [];
  // containers open ('{' or '['); the root object's current key; the message object's current key
  const open: number[] = [];
  let rootKey = "";
  let messageKey = "";
  const scan = new JsonScanner(buf);
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if (c === 0x7b || c === 0x5b) {
      if (open.push(c) > maxDepth) return { tooDeep: true };
    } else if (c === 0x7d || c === 0x5d) {
      open.pop();
    } else if (c === QUOTE) {
      const end = scan.string(i);
      if (end < 0) return undefined;
      const saved = scan.saved;
      const depth = open.length;
      if (buf[skipSpace(buf, end)] === COLON) {
        if (depth === 1 || depth === 3) {
          const key = saved > 0 ? (JSON.parse(buf.toString("utf8", i, end)) as string) : buf.toString("utf8", i + 1, end - 1);
          if (depth === 1) rootKey = key;
          else messageKey = key;
        }
      } else if (end - i - 2 >= LONG_TEXT && depth === 3 && rootKey === "messages" && messageKey === "content" && open[0] === 0x7b && open[1] === 0x5b && open[2] === 0x7b) {
        raws.push(new RawText(buf, i, end, end - i - 2 - saved, saved > 0));
      }
      i = end - 1;
    }
  }
  return raws.length === 0 ? undefined : withRawTexts(buf, raws);
}

/** False when every 8 KB window of the body holds a quote: then no string is 16 KB long. */
function mayHoldLongString(buf: Buffer): boolean {
  const window = LONG_TEXT / 2;
  for (let at = 0; at + window <= buf.length; at += window) {
    const quote = buf.indexOf(QUOTE, at);
    if (quote < 0 || quote >= at + window) return true;
  }
  return false;
}

/** The body parsed with each raw text standing in its place; undefined if any is not where expected. */
function withRawTexts(buf: Buffer, raws: RawText[]): LargeBodyScan {
  const parts: string[] = [];
  let at = 0;
  raws.forEach((raw, k) => {
    parts.push(buf.toString("utf8", at, raw.start), JSON.stringify(marker(k)));
    at = raw.end;
  });
  parts.push(buf.toString("utf8", at));
  let value: unknown;
  try {
    value = JSON.parse(parts.join(""));
  } catch {
    return undefined;
  }
  // only message contents can be markers; a repeated key may have dropped one: parsed whole then
  const messages = (value as { messages?: unknown } | null)?.messages;
  const byMarker = new Map(raws.map((raw, k) => [marker(k), raw]));
  let found = 0;
  if (Array.isArray(messages)) {
    for (const m of messages as Array<{ content?: unknown } | null>) {
      const raw = typeof m?.content === "string" ? byMarker.get(m.content) : undefined;
      if (raw) {
        m!.content = raw;
        found++;
      }
    }
  }
  return found === raws.length ? { value } : undefined;
}

/** What a large body's long string at `path` stays (json/slices.ts `keep`): a RawText for a
 *  `messages[i].content` of LONG_TEXT bytes or more that is valid UTF-8; otherwise its text. */
export function keepRawText(buf: Buffer): (path: JsonPath, string: LongString) => RawText | undefined {
  return (path, { start, end, saved, text }) => {
    if (path.length !== 3 || path[0] !== "messages" || typeof path[1] !== "number" || path[2] !== "content") return undefined;
    if (end - start - 2 < LONG_TEXT || !isUtf8(buf.subarray(start, end))) return undefined;
    return new RawText(buf, start, end, end - start - 2 - saved, saved > 0, text);
  };
}

/** A payload as the JSON body sent to a model; raw texts (only ever a `messages[i].content`) are
 *  written as the client's own bytes. */
export function jsonBody(payload: Record<string, unknown>): string | Buffer {
  const { messages } = payload;
  const holdsRaw = Array.isArray(messages) && messages.some((m: { content?: unknown } | null) => m?.content instanceof RawText);
  return holdsRaw ? jsonWithRawTexts(payload, messages) : JSON.stringify(payload);
}

/** The raw texts are swapped for markers while the rest is serialized (not by a replacer:
 *  JSON.stringify calls toJSON, which decodes, before it), then the markers for their bytes. */
function jsonWithRawTexts(payload: Record<string, unknown>, original: Array<{ content?: unknown }>): Buffer {
  const raws: RawText[] = [];
  const messages = original.map((m) => (m.content instanceof RawText ? { ...m, content: marker(raws.push(m.content) - 1) } : m));
  const text = JSON.stringify({ ...payload, messages });
  const chunks: Buffer[] = [];
  let at = 0;
  raws.forEach((raw, k) => {
    const written = JSON.stringify(marker(k));
    const where = text.indexOf(written, at);
    chunks.push(Buffer.from(text.slice(at, where)), raw.literal());
    at = where + written.length;
  });
  chunks.push(Buffer.from(text.slice(at)));
  return Buffer.concat(chunks);
}
