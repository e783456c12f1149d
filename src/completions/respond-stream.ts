// A streamed legacy completion (docs/fleet.md#completions): the upstream's SSE bytes relayed as they
// arrive by the byte relay, told where a completion chunk holds its text; the usage chunk the
// gateway always asks for is hidden from a client that did not ask. Once the pipeline settled what
// was generated, the closing events; a cut ends with the error event, never a clean end.
import type { Readable } from "node:stream";
import type { Streamed } from "../metered/spec.js";
import { SseRelay } from "../stream/sse-relay.js";
import { SSE_HEADERS, sseEvent, sseStream } from "../stream/sse.js";
import type { TextCompletion } from "./answer.js";
import { completionUsed, type CompletionsCall, type CompletionsPlan, type SettledCompletion } from "./settle.js";
import { COMPLETION_TEXT } from "./stream-text.js";

export function streamCompletion(call: CompletionsCall, plan: CompletionsPlan, body: Readable, maxBytes: number): Streamed {
  let sse: SseRelay;
  let usage: SettledCompletion;
  return {
    headers: SSE_HEADERS,
    body,
    maxBytes,
    sink(res, firstContent) {
      const write = (bytes: string | Buffer) => (res.destroyed ? true : res.write(bytes));
      const { model } = call;
      // an alias asked for is the name every chunk gives (docs/configuration.md#aliases)
      const answerModel = call.req.model !== model.model ? call.req.model : undefined;
      sse = new SseRelay({ detail: false, includeUsage: plan.includeUsage, model: model.model, write, onFirstContent: firstContent, answerModel, text: COMPLETION_TEXT });
      return sse;
    },
    async used(cut) {
      const out = await completionUsed(call, plan, { texts: () => sse.texts(), usage: sse.usage, finishReason: cut?.finishReason ?? sse.finishReason() ?? "stop" });
      usage = out.usage;
      return out.used;
    },
    // the usage chunk the client asked for and the upstream did not send
    end: () => (plan.includeUsage && !sse.usage ? sseEvent({ object: "text_completion", choices: [], usage }) : "") + sseEvent("[DONE]"),
    error: (err) => sseEvent(err.toBody()),
  };
}

/** A whole text completion as SSE bytes, for an upstream that answered a stream request with JSON:
 *  each choice's text, then its finish reason, the usage, and [DONE]. */
export function completionAsSse(completion: TextCompletion): Readable {
  const { choices, usage, ...rest } = completion;
  const base = { ...rest, object: "text_completion" };
  return sseStream([
    ...choices.map((c, i) => ({ ...base, choices: [{ index: c.index ?? i, text: c.text, logprobs: c.logprobs ?? null, finish_reason: null }] })),
    ...choices.map((c, i) => ({ ...base, choices: [{ index: c.index ?? i, text: "", logprobs: null, finish_reason: c.finish_reason ?? "stop" }] })),
    ...(usage ? [{ ...base, choices: [], usage }] : []),
  ]);
}
