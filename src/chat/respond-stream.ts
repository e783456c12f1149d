// A streamed answer, written straight to the Node response: upstream bytes reach the client as
// they arrive (through the SSE relay), with backpressure; the usage chunk the gateway always asks
// for is hidden from clients that did not ask; `detail` switches to FastGPT's event stream
// (docs/api.md#chat). A cut after the first byte is billed for what was generated, then fails the
// stream: the pipeline ends it with the error event, never with a clean end.
import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { cutFinishReason } from "../http/cancel.js";
import type { Meter } from "../metered/meter.js";
import type { Streamed } from "../metered/spec.js";
import { relayAnswer } from "./pump.js";
import type { CompletionJson } from "./attempt.js";
import type { ChatCall, ChatPlan } from "./plan.js";
import { readsReasoningContent, withReasoningContent } from "./reasoning.js";
import { SseRelay } from "./sse-relay.js";
import { clientReport, settleChat, type SettleDeps, type Settled } from "./settle.js";
import { hasAny } from "./variables.js";

// No `connection` header: Node writes its own, and only then adds `keep-alive: timeout=N`, which
// tells pooling clients to drop an idle connection before the server closes it under their next request.
export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

/** The streamed answer of `body` (upstream SSE bytes; `maxBytes`: the answer is cut past it). */
export function streamChat(deps: SettleDeps, call: ChatCall, plan: ChatPlan, meter: Meter, body: Readable, maxBytes: number): Streamed {
  return {
    headers: SSE_HEADERS,
    pump: (res) => relayStream(deps, call, plan, meter, body, res, maxBytes),
    error: (err) => (plan.detail ? `event: error\ndata: ${JSON.stringify(err.toBody())}\n\n` : `data: ${JSON.stringify(err.toBody())}\n\n`),
  };
}

/** Relays `body` to `res`, whose head is already written; resolves when all is written and the
 *  request is settled; rejects (after billing what was generated) when the answer was cut. */
async function relayStream(deps: SettleDeps, call: ChatCall, plan: ChatPlan, meter: Meter, body: Readable, res: ServerResponse, maxBytes: number): Promise<void> {
  const { cancel, model } = call;
  const write = (bytes: string | Buffer) => {
    if (res.destroyed) return true;
    // Once the upstream's [DONE] is in, what is left of its region waits for the closing events
    // and the end (which uncorks): one socket write instead of two.
    if (relay.done && !res.writableCorked) res.cork();
    return res.write(bytes);
  };
  const onFirstContent = () => (call.facts.ttftMs = performance.now() - call.started);
  const rewrite = readsReasoningContent(call) ? withReasoningContent : undefined;
  const relay: SseRelay = new SseRelay({ detail: plan.detail, includeUsage: plan.includeUsage, model: model.model, write, onFirstContent, answerModel: plan.answerModel, rewrite });
  const text = () => relay.text();
  // 1. Relay until [DONE] (or the end of a stream that already gave its finish reason).
  const cut = await relayAnswer(body, res, relay, maxBytes, cancel, model.model);
  if (cut) {
    // 2a. Cut: bill what was generated, then fail the stream (the pipeline tells the client).
    const finishReason = cutFinishReason(cancel);
    await settleChat(deps, call, plan, meter, { text, usage: relay.usage, finishReason: () => finishReason, cut });
    throw cut;
  }

  // 2b. Settle (the turns are stored before the client sees the end), then close the stream.
  const settled = await settleChat(deps, call, plan, meter, { text, usage: relay.usage, finishReason: () => relay.finishReason() ?? "stop" });
  if (plan.includeUsage && !relay.usage) write(`${plan.detail ? "event: answer\n" : ""}data: ${usageChunk(settled)}\n\n`);
  // FastGPT sends the chat's variables before its closing events, when it has any
  if (plan.detail && hasAny(plan.variables)) write(`event: updateVariables\ndata: ${JSON.stringify(plan.variables)}\n\n`);
  write(plan.detail ? "event: answer\ndata: [DONE]\n\n" : "data: [DONE]\n\n");
  if (plan.detail) write(`event: flowResponses\ndata: ${JSON.stringify([clientReport(call, settled)])}\n\n`);
  // no res.end() here: h3 ends the response once the writer is done
}


/** A whole completion as SSE bytes, for an upstream that answered a stream request with JSON. */
export function completionAsSse(completion: CompletionJson): Readable {
  const { choices, usage, ...rest } = completion;
  const base = { ...rest, object: "chat.completion.chunk" };
  const choice = choices[0];
  // everything the message carries — text, reasoning, tool calls (each with the index a chunk's have)
  const { role: _role, content, tool_calls: calls, ...more } = choice?.message ?? {};
  const toolCalls = Array.isArray(calls) ? { tool_calls: calls.map((call: object, index) => ({ index, ...call })) } : {};
  const delta = { role: "assistant", ...more, content: content ?? "", ...toolCalls };
  const events = [
    { ...base, choices: [{ index: 0, delta, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: choice?.finish_reason ?? "stop" }], ...(usage ? { usage } : {}) },
  ];
  return Readable.from([...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), "data: [DONE]\n\n"].map((s) => Buffer.from(s)));
}

function usageChunk(s: Settled): string {
  return JSON.stringify({
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt_tokens: s.inputTokens, completion_tokens: s.outputTokens, total_tokens: s.inputTokens + s.outputTokens },
  });
}
