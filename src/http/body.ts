// Reads a JSON request body with a size and a nesting limit, straight from the Node request stream.
import type { IncomingMessage } from "node:http";
import type { H3Event } from "h3";
import { BodyRefused, parseInPieces as inPieces, parseScanned as scanned, parseWhole, PIECES_BODY } from "../json/body-parse.js";
import { LARGE_BODY } from "../json/raw-text.js";
import { cutError, type Cancel } from "./cancel.js";
import { GatewayError, badRequest } from "./errors.js";
import { nodeRequest } from "./node.js";

function tooLarge(limit: number): GatewayError {
  // the connection closes after the answer: what is left of a large body is not worth reading
  return new GatewayError(413, "request_too_large", `Request body is larger than ${limit} bytes.`, { headers: { connection: "close" } });
}

export { MAX_BODY_VALUES, PIECES_BODY } from "../json/body-parse.js";

/** The limit of the routes that take a few fields (share, admin), whatever bodyLimitBytes says. */
export const SMALL_BODY_BYTES = 64 * 1024;

export interface BodyLimits {
  maxBytes: number;
  /** deeper nesting is refused before parsing: no later step can overflow the stack on it */
  maxDepth: number;
}

/** The parsed JSON body; 415 for a non-JSON content type, 413 over the size, 400 for malformed or too
 *  deeply nested JSON. `rawTexts`: long message contents of a large body may stay RawTexts (json/raw-text.ts).
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
  // a small body's parse is its value, not a promise: no turn more than before
  return parseJsonBytes(buf, limits, rawTexts, check);
}

/** A JSON body's bytes, parsed as readJsonBody parses what it read (a call with no HTTP request
 *  gives its bytes: memory-call.ts). */
export function parseJsonBytes(buf: Buffer, limits: BodyLimits, rawTexts = false, check?: (raw: Buffer) => void): unknown {
  if (buf.length > limits.maxBytes) throw tooLarge(limits.maxBytes);
  check?.(buf);
  if (buf.length === 0) throw badRequest("invalid_json", "Request body is empty: send a JSON object.");
  // a body past PIECES_BODY is parsed in pieces, each in a turn of the event loop of its own: no
  // body, however it is made, is one long step (docs/api.md#request-bounds)
  if (buf.length >= PIECES_BODY) return parseLarge(buf, limits.maxDepth, rawTexts);
  if (buf.length < LARGE_BODY) {
    try {
      return parseWhole(buf, limits.maxDepth);
    } catch (err) {
      throw err instanceof BodyRefused ? badRequest(err.code, err.message) : err;
    }
  }
  return parseScanned(buf, limits.maxDepth, rawTexts);
}

/** A large body under PIECES_BODY, scanned and parsed whole (json/body-parse.ts), its refusal a 400. */
export const parseScanned = (buf: Buffer, maxDepth: number, rawTexts: boolean): Promise<unknown> => refused(scanned(buf, maxDepth, rawTexts));

/** A body of PIECES_BODY bytes or more, parsed in pieces (json/body-parse.ts), its refusal a 400. */
export const parseLarge = (buf: Buffer, maxDepth: number, rawTexts: boolean): Promise<unknown> => refused(inPieces(buf, maxDepth, rawTexts));

/** The body parser's refusal as the client's 400, naming what was wrong. */
function refused<T>(parse: Promise<T>): Promise<T> {
  return parse.catch((err: unknown) => {
    throw err instanceof BodyRefused ? badRequest(err.code, err.message) : err;
  });
}

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
