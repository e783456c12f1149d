// Reads a JSON request body with a size and a nesting limit, straight from the Node request stream.
import type { IncomingMessage } from "node:http";
import type { H3Event } from "h3";
import { JsonScanner } from "../json/scan.js";
import { cutError, type Cancel } from "./cancel.js";
import { GatewayError, badRequest } from "./errors.js";
import { nodeRequest } from "./node.js";
import { LARGE_BODY, scanLargeBody } from "./raw-text.js";

function tooLarge(limit: number): GatewayError {
  // the connection closes after the answer: what is left of a large body is not worth reading
  return new GatewayError(413, "request_too_large", `Request body is larger than ${limit} bytes.`, { headers: { connection: "close" } });
}

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
  check?.(buf);
  // a large body is checked, parsed and worked on in turns of the event loop of their own: its
  // reading, its nesting scan, its parsing and what follows never add up to one stall (docs/api.md#request-bounds)
  const turn = buf.length >= LARGE_BODY ? nextTurn : noTurn;
  await turn();
  const value = await parseJson(buf, limits.maxDepth, rawTexts, turn);
  await turn();
  return value;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const noTurn = () => Promise.resolve();

async function parseJson(buf: Buffer, maxDepth: number, rawTexts: boolean, turn: () => Promise<void>): Promise<unknown> {
  const scan = rawTexts ? scanLargeBody(buf, maxDepth) : undefined;
  if (scan && "value" in scan) return scan.value;
  if (scan?.tooDeep) throw tooDeep(maxDepth);
  if (buf.length === 0) throw badRequest("invalid_json", "Request body is empty: send a JSON object.");
  if (new JsonScanner(buf).nestingExceeds(maxDepth)) throw tooDeep(maxDepth);
  await turn();
  const text = buf.toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest("invalid_json", "Request body is not valid JSON.");
  }
}

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
