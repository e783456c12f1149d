// A streamed legacy completion (docs/fleet.md#completions): the upstream's SSE bytes relayed as they
// arrive by the chat byte relay, told where a completion chunk holds its text; the usage chunk the
// gateway always asks for is hidden from a client that did not ask. A cut after the first byte is
// billed for what was generated, then fails the stream (the pipeline ends it with the error event).
import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { relayAnswer } from "../stream/pump.js";
import { SseRelay } from "../stream/sse-relay.js";
import { SSE_HEADERS } from "../stream/sse.js";
import { cutFinishReason } from "../http/cancel.js";
import type { Meter } from "../metered/meter.js";
import type { Streamed } from "../metered/spec.js";
import type { TextCompletion } from "./answer.js";
import { settleCompletion, type CompletionsCall, type CompletionsPlan } from "./settle.js";
import { COMPLETION_TEXT } from "./stream-text.js";

export function streamCompletion(call: CompletionsCall, plan: CompletionsPlan, meter: Meter, body: Readable, maxBytes: number): Streamed {
  return {
    headers: SSE_HEADERS,
    pump: (res) => relay(call, plan, meter, body, res, maxBytes),
    error: (err) => `data: ${JSON.stringify(err.toBody())}\n\n`,
  };
}

async function relay(call: CompletionsCall, plan: CompletionsPlan, meter: Meter, body: Readable, res: ServerResponse, maxBytes: number): Promise<void> {
  const { cancel, model } = call;
  const write = (bytes: string | Buffer) => (res.destroyed ? true : res.write(bytes));
  const onFirstContent = () => (call.facts.ttftMs = performance.now() - call.started);
  // an alias asked for is the name every chunk gives (docs/configuration.md#aliases)
  const answerModel = call.req.model !== model.model ? call.req.model : undefined;
  const sse = new SseRelay({ detail: false, includeUsage: plan.includeUsage, model: model.model, write, onFirstContent, answerModel, text: COMPLETION_TEXT });
  const texts = () => sse.texts();
  // 1. Relay until [DONE] (or the end of a stream that already gave its finish reason).
  const cut = await relayAnswer(body, res, sse, maxBytes, cancel, model.model);
  if (cut) {
    // 2a. Cut: bill what was generated, then fail the stream.
    await settleCompletion(call, plan, meter, { texts, usage: sse.usage, finishReason: cutFinishReason(cancel), cut });
    throw cut;
  }
  // 2b. Settle, then close the stream (with the usage chunk the client asked for and the upstream did not send).
  const settled = await settleCompletion(call, plan, meter, { texts, usage: sse.usage, finishReason: sse.finishReason() ?? "stop" });
  if (plan.includeUsage && !sse.usage) write(`data: ${JSON.stringify({ object: "text_completion", choices: [], usage: settled })}\n\n`);
  write("data: [DONE]\n\n");
}

/** A whole text completion as SSE bytes, for an upstream that answered a stream request with JSON:
 *  each choice's text, then its finish reason, the usage, and [DONE]. */
export function completionAsSse(completion: TextCompletion): Readable {
  const { choices, usage, ...rest } = completion;
  const base = { ...rest, object: "text_completion" };
  const events = [
    ...choices.map((c, i) => ({ ...base, choices: [{ index: c.index ?? i, text: c.text, logprobs: c.logprobs ?? null, finish_reason: null }] })),
    ...choices.map((c, i) => ({ ...base, choices: [{ index: c.index ?? i, text: "", logprobs: null, finish_reason: c.finish_reason ?? "stop" }] })),
    ...(usage ? [{ ...base, choices: [], usage }] : []),
  ];
  return Readable.from([...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), "data: [DONE]\n\n"].map((s) => Buffer.from(s)));
}
