// JSON answers, as every successful JSON route sends them.
import type { H3Event } from "h3";
import { FastResponse } from "srvx";
import { answerOut } from "./answer-out.js";
import { writeToNode, type Reply } from "./node.js";

const JSON_TYPE = "application/json; charset=utf-8";
const JSON_HEADERS = { "content-type": JSON_TYPE };

export function jsonResponse(body: unknown, status = 200): Response {
  return new FastResponse(JSON.stringify(body), { status, headers: JSON_HEADERS });
}

/** A 200 JSON answer held as parts (a large upstream answer with a few bytes changed): written to
 *  the Node response as they are, in one socket write, never joined into one copy. */
export function sendJsonParts(event: H3Event, parts: Buffer[]): Promise<Reply> | Reply {
  const res = answerOut(event);
  if (!res) return new FastResponse(Buffer.concat(parts), { headers: JSON_HEADERS });
  return writeToNode(event, () => {
    if (res.destroyed) return; // the client left: nobody to answer
    let length = 0;
    for (const part of parts) length += part.length;
    res.writeHead(200, { "content-type": JSON_TYPE, "content-length": length });
    // held until h3 ends the response: one socket write
    res.cork();
    for (const part of parts) res.write(part);
  });
}
