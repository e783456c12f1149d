// Reads a JSON request body with a size limit, straight from the Node request stream.
import type { IncomingMessage } from "node:http";
import type { H3Event } from "h3";
import { GatewayError, badRequest } from "./errors.js";

function tooLarge(limit: number): GatewayError {
  return new GatewayError(413, "request_too_large", `Request body is larger than ${limit} bytes.`);
}

/** The parsed JSON body; 415 for a non-JSON content type, 413 over `limit`, 400 for malformed JSON. */
export async function readJsonBody(event: H3Event, limit: number): Promise<unknown> {
  const type = event.req.headers.get("content-type");
  if (type && !/^application\/(.+\+)?json\b/i.test(type)) {
    throw new GatewayError(415, "unsupported_media_type", "Content-Type must be application/json.");
  }
  const declared = Number(event.req.headers.get("content-length") ?? NaN);
  if (declared > limit) throw tooLarge(limit);
  const nodeReq = event.runtime?.node?.req as IncomingMessage | undefined;
  const text = nodeReq ? await readNodeBody(nodeReq, limit) : await readWebBody(event.req, limit);
  if (text.length === 0) throw badRequest("invalid_json", "Request body is empty: send a JSON object.");
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest("invalid_json", "Request body is not valid JSON.");
  }
}

function readNodeBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
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
      resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

async function readWebBody(req: Request, limit: number): Promise<string> {
  const buf = await req.arrayBuffer();
  if (buf.byteLength > limit) throw tooLarge(limit);
  return new TextDecoder().decode(buf);
}
