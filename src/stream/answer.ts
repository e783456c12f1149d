// An answer that may stream (docs/architecture.md#streams): what a chat-like attempt got — the
// upstream's SSE bytes as they arrive, or a whole JSON answer it read — and which way it goes to the
// client: whole when the client asked for no stream, else streamed; a whole answer to a stream
// request (an upstream that ignored `stream`) is turned to SSE, so the client gets what it asked for.
import type { Readable } from "node:stream";

export type SseAnswer<Json> = { kind: "json"; completion: Json } | { kind: "stream"; body: Readable; /** the answer is cut past this many bytes */ maxBytes: number };

export interface AnswerWays<Json, W, S> {
  whole(completion: Json): W;
  stream(body: Readable, maxBytes: number): S;
  /** a whole answer as the SSE bytes a stream of it would have been */
  asSse(completion: Json): Readable;
}

export function wholeOrStream<Json, W, S>(answer: SseAnswer<Json>, streams: boolean, ways: AnswerWays<Json, W, S>): W | S {
  if (answer.kind === "stream") return ways.stream(answer.body, answer.maxBytes);
  return streams ? ways.stream(ways.asSse(answer.completion), Number.POSITIVE_INFINITY) : ways.whole(answer.completion);
}
