// Where a streamed legacy completion holds its text (docs/fleet.md#completions): its SSE events
// carry `text_completion` chunks whose `choices[].text` is the next piece — where a chat chunk has
// `choices[].delta.content`. The chat byte relay (src/stream/sse-relay.ts) relays both alike; this
// tells it where the text is, for the first-content signal and for counting an answer that reports
// no usage.
import type { StreamText } from "../stream/sse-relay.js";

export const COMPLETION_TEXT: StreamText = {
  content: /"text": ?"[^"]/,
  piece: (choice) => choice.text,
};
