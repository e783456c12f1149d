// A JSON response, as every successful JSON route sends it.
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import { FastResponse } from "srvx";
import { HANDLED } from "./facts.js";

const JSON_TYPE = "application/json; charset=utf-8";
const JSON_HEADERS = { "content-type": JSON_TYPE };

export function jsonResponse(body: unknown): Response {
  return new FastResponse(JSON.stringify(body), { headers: JSON_HEADERS });
}

/** A 200 JSON answer held as parts (a large upstream answer with a few bytes changed): written to
 *  the Node response as they are, in one socket write, never joined into one copy. */
export function sendJsonParts(event: H3Event, parts: Buffer[]): Response | typeof HANDLED {
  const res = event.runtime?.node?.res as ServerResponse | undefined;
  if (!res) return new FastResponse(Buffer.concat(parts), { headers: JSON_HEADERS });
  if (res.destroyed) return HANDLED; // the client left: nobody to answer
  let length = 0;
  for (const part of parts) length += part.length;
  res.writeHead(200, { "content-type": JSON_TYPE, "content-length": length });
  // held until the server adapter ends the response (as it does for HANDLED): one socket write
  res.cork();
  for (const part of parts) res.write(part);
  return HANDLED;
}
