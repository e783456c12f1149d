// Server-sent events, the one framer (docs/architecture.md#streams): the head of an event stream,
// an event written, a list of events as a stream, and the data of an event read back.
import { Readable } from "node:stream";

// No `connection` header: Node writes its own, and only then adds `keep-alive: timeout=N`, which
// tells pooling clients to drop an idle connection before the server closes it under their next request.
export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

/** One event: its `data` (a string as is, anything else as JSON), named by `event` when given. */
export function sseEvent(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

/** Events as an SSE byte stream ending with `[DONE]`: a whole answer for a client that asked for a stream. */
export function sseStream(events: unknown[]): Readable {
  return Readable.from([...events.map((e) => sseEvent(e)), sseEvent("[DONE]")].map((s) => Buffer.from(s)));
}

/** The `data:` payload of one SSE event (several data lines join with newlines); undefined if none. */
export function dataOf(block: string): string | undefined {
  let data: string | undefined;
  for (const line of block.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}
