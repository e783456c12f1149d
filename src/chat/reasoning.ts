// Today's engines, as FastGPT reads them (docs/fastgpt.md#reasoning): vLLM renamed a message's
// `reasoning_content` to `reasoning`, and FastGPT reads only `reasoning_content`. So on the answers
// FastGPT gets — its routes (`/api/v1/…`, flagged in src/routes.ts), share links, and the calls of
// an admin key (its AI Proxy token) — a `reasoning` from the model also arrives as
// `reasoning_content`, whole and streamed. A stream's bytes are searched, not parsed: a region
// without the key passes untouched.
import type { CompletionJson } from "./attempt.js";
import type { ChatCall } from "./plan.js";

/** A `reasoning` member with a string value; inside a JSON string every quote is escaped, so only a key matches. */
const REASONING = /"reasoning": ?("(?:[^"\\]|\\.)*")/g;
const REASONING_KEY = Buffer.from('"reasoning":');
const REASONING_KEY_SPACED = Buffer.from('"reasoning": ');
const CONTENT_KEY = Buffer.from('"reasoning_content"');

/** Is this call's answer read by FastGPT? Its route says so (src/routes.ts), not its URL. */
export function readsReasoningContent(call: ChatCall): boolean {
  return call.inbound.fastgpt || call.caller.share !== undefined || call.caller.key?.kind === "admin";
}

/** SSE bytes with each `reasoning` also given as `reasoning_content` (a region that has one already stays). */
export function withReasoningContent(region: Buffer): Buffer {
  if (region.indexOf(REASONING_KEY) < 0 && region.indexOf(REASONING_KEY_SPACED) < 0) return region;
  if (region.indexOf(CONTENT_KEY) >= 0) return region;
  return Buffer.from(region.toString("utf8").replace(REASONING, '"reasoning":$1,"reasoning_content":$1'));
}

/** A whole completion's messages given `reasoning_content` where they have only `reasoning`. */
export function addReasoningContent(completion: CompletionJson): void {
  for (const choice of completion.choices) {
    const message = choice.message;
    if (message && typeof message.reasoning === "string" && message.reasoning_content == null) message.reasoning_content = message.reasoning;
  }
}
