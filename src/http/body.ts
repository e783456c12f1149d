// Reads a JSON request body with a size and a nesting limit, straight from the Node request stream.
import type { IncomingMessage } from "node:http";
import type { H3Event } from "h3";
import { JsonScanner } from "../json/scan.js";
import { cutError, type Cancel } from "./cancel.js";
import { GatewayError, badRequest } from "./errors.js";
import { nodeRequest } from "./node.js";
import { JsonPieceError, parseInPieces } from "../json/slices.js";
import { LARGE_BODY, LONG_TEXT, keepRawText, scanLargeBody } from "./raw-text.js";

function tooLarge(limit: number): GatewayError {
  // the connection closes after the answer: what is left of a large body is not worth reading
  return new GatewayError(413, "request_too_large", `Request body is larger than ${limit} bytes.`, { headers: { connection: "close" } });
}

/** The most objects, arrays and strings (keys counted) a body may hold: a 10,000-message conversation
 *  holds about 50,000 (docs/api.md#request-bounds). */
export const MAX_BODY_VALUES = 100_000;

/** The limit of the routes that take a few fields (share, admin), whatever bodyLimitBytes says. */
export const SMALL_BODY_BYTES = 64 * 1024;

export interface BodyLimits {
  maxBytes: number;
  /** deeper nesting is refused before parsing: no later step can overflow the stack on it */
  maxDepth: number;
}

/** The parsed JSON body; 415 for a non-JSON content type, 413 over the size, 400 for malformed or too
 *  deeply nested JSON. `rawTexts`: long message contents of a large body may stay RawTexts (raw-text.ts).
 *  `check`: runs on the bytes before they are parsed, and may refuse them. */
export async function readJsonBody(event: H3Event, limits: BodyLimits, cancel?: Cancel, rawTexts = false, check?: (raw: Buffer) => void): Promise<unknown> {
  const limit = limits.maxBytes;
  const type = event.req.headers.get("content-type");
  if (type && !/^application\/(.+\+)?json\b/i.test(type)) {
    throw new GatewayError(415, "unsupported_media_type", "Content-Type must be application/json.");
  }
  const declared = Number(event.req.headers.get("content-length") ?? NaN);
  if (declared > limit) throw tooLarge(limit);
  const nodeReq = nodeRequest(event);
  const buf = nodeReq ? await readNodeBody(nodeReq, limit, cancel) : await readWebBody(event.req, limit);
  return parseJsonBytes(buf, limits, rawTexts, check);
}

/** A JSON body's bytes, parsed as readJsonBody parses what it read (a call with no HTTP request
 *  gives its bytes: memory-call.ts). */
export async function parseJsonBytes(buf: Buffer, limits: BodyLimits, rawTexts = false, check?: (raw: Buffer) => void): Promise<unknown> {
  if (buf.length > limits.maxBytes) throw tooLarge(limits.maxBytes);
  check?.(buf);
  if (buf.length === 0) throw badRequest("invalid_json", "Request body is empty: send a JSON object.");
  // a body past PIECES_BODY is parsed in pieces, each in a turn of the event loop of its own: no
  // body, however it is made, is one long step (docs/api.md#request-bounds)
  if (buf.length >= PIECES_BODY) return parseLarge(buf, limits.maxDepth, rawTexts);
  if (buf.length < LARGE_BODY) return parseWhole(buf, limits.maxDepth);
  return parseScanned(buf, limits.maxDepth, rawTexts);
}

/** A large body under PIECES_BODY, scanned and parsed whole in turns of their own: a few ms each
 *  at most, where the pieces' own work costs twice the parse (docs/performance.md#the-non-stream-path);
 *  long message contents stay RawTexts when `rawTexts`. */
export async function parseScanned(buf: Buffer, maxDepth: number, rawTexts: boolean): Promise<unknown> {
  await nextTurn(); // its reading was a turn of its own
  const scan = rawTexts ? scanLargeBody(buf, maxDepth) : undefined;
  if (scan && "tooDeep" in scan) throw tooDeep(maxDepth);
  const value = scan && "value" in scan ? scan.value : parseWhole(buf, maxDepth);
  await nextTurn();
  return value;
}

/** Bodies of this many bytes or more are parsed in pieces: one JSON.parse of 256 KiB of the worst
 *  shape (87,000 empty arrays) takes 7 ms, 15 at most (docs/api.md#request-bounds). */
export const PIECES_BODY = 256 * 1024;

function parseWhole(buf: Buffer, maxDepth: number): unknown {
  if (new JsonScanner(buf).nestingExceeds(maxDepth)) throw tooDeep(maxDepth);
  try {
    return JSON.parse(buf.toString("utf8"));
  } catch {
    throw notJson();
  }
}

/** A body of PIECES_BODY bytes or more, parsed in pieces; long message contents stay RawTexts when `rawTexts`. */
export async function parseLarge(buf: Buffer, maxDepth: number, rawTexts: boolean): Promise<unknown> {
  await nextTurn(); // its reading was a turn of its own
  try {
    const keep = rawTexts ? keepRawText(buf) : undefined;
    const value = await parseInPieces(buf, { maxDepth, maxValues: MAX_BODY_VALUES, longString: LONG_TEXT, keep, turn: nextTurn });
    await nextTurn();
    return value;
  } catch (err) {
    if (!(err instanceof JsonPieceError)) throw err;
    if (err.reason === "tooMany") throw badRequest("json_too_many_values", `Request body holds more than ${MAX_BODY_VALUES} objects, arrays and strings.`);
    throw err.reason === "tooDeep" ? tooDeep(maxDepth) : notJson();
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const notJson = () => badRequest("invalid_json", "Request body is not valid JSON.");
const tooDeep = (max: number) => badRequest("json_too_deep", `Request body nests arrays or objects more than ${max} levels deep.`);

function readNodeBody(req: IncomingMessage, limit: number, cancel?: Cancel): Promise<Buffer> {
  if (cancel?.aborted) return Promise.reject(cutError(cancel, "the request"));
  return new Promise((resolve, reject) => {
    // a shutdown (or the client leaving) stops a body still arriving: a slow upload never holds exit,
    // and a client that hung up mid-upload is a client abort (499), not the gateway's failure
    const onCancel = () => {
      cleanup();
      reject(cancel ? cutError(cancel, "the request") : new Error("cancelled"));
    };
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.resume(); // drain the rest so the 413 can still be written on this connection
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      cancel?.off("abort", onCancel);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    cancel?.once("abort", onCancel);
  });
}

async function readWebBody(req: Request, limit: number): Promise<Buffer> {
  const buf = await req.arrayBuffer();
  if (buf.byteLength > limit) throw tooLarge(limit);
  return Buffer.from(buf);
}
