// The one place the gateway reaches past h3 to Node's request and response (docs/architecture.md#http):
// bodies read straight from the request stream, and answers written straight to the response (streams,
// large answers in parts). Such a writer's handler answers h3 with an empty Response once it is done:
// srvx then writes no head of its own (the head is sent) and ends the response. h3's own
// `fromNodeHandler` does the same with more machinery per request: measured, 30-100 us more a request
// in isolation and ~300 us more on the embeddings bench (docs/performance.md#results).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { H3Event } from "h3";
import { FastResponse } from "srvx";

/** An answer written to the Node response: h3 (srvx) only ends it, writing no head of its own. */
export class Written extends FastResponse {
  constructor() {
    super(null);
  }
}

/** What every route handler gives back: a Response, or an answer already written. */
export type Reply = Response | Written;

export function nodeRequest(event: H3Event): IncomingMessage | undefined {
  return event.runtime?.node?.req as IncomingMessage | undefined;
}

/** http/1.1 only: the server speaks no http2. */
export function nodeResponse(event: H3Event): ServerResponse | undefined {
  return event.runtime?.node?.res as ServerResponse | undefined;
}

/** Hands the Node response to `write`; once `write` has resolved, h3 (srvx) ends the response.
 *  `write` must not throw. */
export async function writeToNode(event: H3Event, write: (res: ServerResponse) => void | Promise<void>): Promise<Written> {
  await write(nodeResponse(event)!);
  return new Written();
}

/** A header on the answer whichever way it is written (a Response's headers are merged into the
 *  Node response's by srvx; one written straight to the socket has them already). */
export function setAnswerHeader(event: H3Event, name: string, value: string): void {
  nodeResponse(event)?.setHeader(name, value);
}

/** The status of the answer: a Response's, or the one written to the Node response. */
export function statusOf(event: H3Event, reply: Reply): number {
  return !(reply instanceof Written) ? reply.status : (nodeResponse(event)?.statusCode ?? 200);
}
