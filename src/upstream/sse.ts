// Turns a byte stream of Server-Sent Events into the `data:` payloads, with eventsource-parser.
import { createParser, type EventSourceMessage } from "eventsource-parser";

type Bytes = Buffer | Uint8Array;

/**
 * Yields each event's data and returns at `[DONE]`; throws `onCut()` when the bytes end without it.
 * After `[DONE]` the rest of the body is drained in the background rather than destroyed, so the
 * pooled connection is reused instead of being closed.
 */
export async function* readSseData(body: AsyncIterable<Bytes>, onCut: () => Error): AsyncGenerator<string> {
  const pending: string[] = [];
  let done = false;
  const parser = createParser({
    onEvent(event: EventSourceMessage) {
      if (event.data === "[DONE]") done = true;
      else if (!done) pending.push(event.data);
    },
  });
  const decoder = new TextDecoder();
  const it = body[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (;;) {
      const next = await it.next();
      if (next.done) break;
      parser.feed(decoder.decode(next.value, { stream: true }));
      for (let i = 0; i < pending.length; i++) yield pending[i]!;
      pending.length = 0;
      if (done) {
        finished = true;
        void drain(it);
        return;
      }
    }
    finished = true;
  } finally {
    // the consumer stopped early (client gone): release the upstream body now
    if (!finished) await it.return?.();
  }
  parser.feed(decoder.decode());
  for (const data of pending) yield data;
  if (!done) throw onCut();
}

async function drain(it: AsyncIterator<Bytes>): Promise<void> {
  try {
    while (!(await it.next()).done);
  } catch {
    // the answer is complete; a late socket error changes nothing
  }
}
