// The bodies FastGPT's log detail shows (docs/fastgpt.md#bodies), for the apps that keep them
// (`apps[].logBodies`): the request as received — its bytes, not its parse written out again — and
// the answer as sent — its bytes teed from the response as they are written, whole or streamed,
// errors too —, each read up to a bound, redacted (body-redact.ts), cut to
// `server.bodyLog.maxBytes`, and stored once the answer is over, off the request's path. They go to
// the store only: never to the request log, metrics or the usage API.
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import type { RequestFacts } from "../http/facts.js";
import { nodeResponse } from "../http/node.js";
import type { Store } from "../store/types.js";
import { cut, type Redactor } from "./body-redact.js";

export interface BodyLogDeps {
  store: Pick<Store, "saveBodies">;
  /** every configured secret out: client keys given in plain, channel keys, the metrics token */
  redact: Redactor;
  maxBytes: number;
  retentionMs: number;
}

/** What redaction may shorten is read beyond the cut, up to this many times it. */
const READ_BEYOND = 4;
const TEXT_TYPE = /json|text|event-stream/i;
/** blanks and quotes: where a key in text or in JSON ends */
const WORD_ENDS = new Set([0x20, 0x09, 0x0a, 0x0d, 0x22, 0x27]);

/** Starts teeing the answer of a request whose app keeps bodies (`mode` errors or all). `request`:
 *  the body's bytes as read, or what the kind says an upload was. */
export function captureBodies(event: H3Event, deps: BodyLogDeps, mode: "errors" | "all", request: Buffer | string, facts: RequestFacts, time: number): void {
  const res = nodeResponse(event);
  if (!res) return;
  const bound = deps.maxBytes * READ_BEYOND;
  // the request's head only, decoded now: the whole body is not held until the answer is over
  const requestOver = typeof request !== "string" && request.length > bound;
  const requestText = typeof request === "string" ? request : request.toString("utf8", 0, requestOver ? bound : request.length);
  const bearer = /^Bearer\s+(\S+)/i.exec(event.req.headers.get("authorization") ?? "")?.[1];
  const answer = tee(res, bound);
  // "close" comes once, whether the answer ended or the client left
  res.on("close", () => {
    // only a request that reached a model server has a usage row to show the bodies with
    if (!facts.channel || !facts.requestId || (mode === "errors" && res.statusCode === 200)) return;
    const type = String(res.getHeader("content-type") ?? "");
    const response = TEXT_TYPE.test(type) ? answer.text() : `<${answer.bytes} bytes ${type || "unknown"}>`;
    const [req, requestTruncated] = kept(deps.redact(requestText, bearer), requestOver, deps.maxBytes);
    const [resp, responseTruncated] = kept(deps.redact(response, bearer), answer.over, deps.maxBytes);
    const saved = { requestId: facts.requestId, time, request: req, response: resp, requestTruncated, responseTruncated, expiresAt: time + deps.retentionMs };
    // a body that could not be kept costs the request nothing
    void deps.store.saveBodies(saved).catch(() => {});
  });
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
 *  usually is one, encoded once, by the socket), bytes as they are. */
function tee(res: ServerResponse, limit: number) {
  const chunks: Array<Buffer | string> = [];
  let kept = 0;
  let bytes = 0;
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === "function") return;
    const utf8 = typeof chunk === "string" && (typeof encoding !== "string" || /^utf-?8$/i.test(encoding));
    const part = utf8 ? chunk : Buffer.isBuffer(chunk) ? chunk : typeof chunk === "string" ? Buffer.from(chunk, encoding as BufferEncoding) : Buffer.from(chunk as Uint8Array);
    const length = typeof part === "string" ? Buffer.byteLength(part) : part.length;
    bytes += length;
    if (kept >= limit) return;
    const room = limit - kept;
    chunks.push(length <= room ? part : (typeof part === "string" ? Buffer.from(part) : part).subarray(0, room));
    kept += Math.min(length, room);
  };
  const write = res.write as (...args: unknown[]) => boolean;
  const end = res.end as (...args: unknown[]) => ServerResponse;
  res.write = ((...args: unknown[]) => (keep(args[0], args[1]), write.apply(res, args))) as ServerResponse["write"];
  res.end = ((...args: unknown[]) => (keep(args[0], args[1]), end.apply(res, args))) as ServerResponse["end"];
  return {
    // bytes joined before they are decoded: a character may be split between two writes
    text: () => (chunks.length === 1 ? chunks[0]!.toString() : Buffer.concat(chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c))).toString("utf8")),
    get bytes() {
      return bytes;
    },
    get over() {
      return bytes > kept;
    },
  };
}
