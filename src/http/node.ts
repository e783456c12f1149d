// The one place the gateway reaches past h3 to Node's request and response (docs/architecture.md#http):
// bodies read straight from the request stream, and answers written straight to the response (streams,
// large answers in parts) through h3's own `fromNodeHandler`, which finishes the response when the
// writer is done. Everything else answers with a Response.
import type { IncomingMessage, ServerResponse } from "node:http";
import { fromNodeHandler, type H3Event } from "h3";

declare const written: unique symbol;
/** An answer written to the Node response (h3 sends nothing more for it). */
export type Written = { readonly [written]: true };

/** What every route handler gives back: a Response, or an answer already written. */
export type Reply = Response | Written;

export function nodeRequest(event: H3Event): IncomingMessage | undefined {
  return event.runtime?.node?.req as IncomingMessage | undefined;
}

/** http/1.1 only: the server speaks no http2. */
export function nodeResponse(event: H3Event): ServerResponse | undefined {
  return event.runtime?.node?.res as ServerResponse | undefined;
}

/** Hands the Node response to `write`; h3 ends it once `write` has resolved. `write` must not throw.
 *  Resolves when `write` is done, even when the client left before (h3 itself is done at its close). */
export async function writeToNode(event: H3Event, write: (res: ServerResponse) => void | Promise<void>): Promise<Written> {
  let writing: Promise<void> = Promise.resolve();
  // http/1.1 only: the response is always a ServerResponse
  const handled = await fromNodeHandler((_req, res) => (writing = Promise.resolve(write(res as ServerResponse))))(event);
  await writing;
  return handled as Written;
}

/** A header on the answer whichever way it is written (a Response's headers are merged into the
 *  Node response's by srvx; one written straight to the socket has them already). */
export function setAnswerHeader(event: H3Event, name: string, value: string): void {
  nodeResponse(event)?.setHeader(name, value);
}

/** The status of the answer: a Response's, or the one written to the Node response. */
export function statusOf(event: H3Event, reply: Reply): number {
  return reply instanceof Response ? reply.status : (nodeResponse(event)?.statusCode ?? 200);
}
