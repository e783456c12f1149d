// A streamed answer (docs/api.md#chat): upstream bytes reach the client as they arrive through the
// SSE relay, which the pipeline pumps; the usage chunk the gateway always asks for is hidden from
// clients that did not ask; `detail` switches to FastGPT's event stream. Once the pipeline settled
// what was generated, the closing events; a cut ends with the error event, never a clean end.
import type { Readable } from "node:stream";
import type { Streamed } from "../metered/spec.js";
import { SseRelay } from "../stream/sse-relay.js";
import { SSE_HEADERS, sseEvent, sseStream } from "../stream/sse.js";
import type { CompletionJson } from "./attempt.js";
import type { ChatCall, ChatPlan } from "./plan.js";
import { readsReasoningContent, withReasoningContent } from "./reasoning.js";
import { chatUsed, clientReport, type SettleDeps, type Settled } from "./settle.js";
import { hasAny } from "./variables.js";

/** The streamed answer of `body` (upstream SSE bytes; `maxBytes`: the answer is cut past it). */
export function streamChat(deps: SettleDeps, call: ChatCall, plan: ChatPlan, body: Readable, maxBytes: number): Streamed {
  let relay: SseRelay;
  let settled: Settled;
  const answer = plan.detail ? "answer" : undefined;
  return {
    headers: SSE_HEADERS,
    body,
    maxBytes,
    sink(res, firstContent) {
      const write = (bytes: string | Buffer) => {
        if (res.destroyed) return true;
        // Once the upstream's [DONE] is in, what is left of its region waits for the closing events
        // and the end (which uncorks): one socket write instead of two.
        if (relay.done && !res.writableCorked) res.cork();
        return res.write(bytes);
      };
      // FastGPT reads a model's reasoning as reasoning_content (docs/fastgpt.md#reasoning)
      const rewrite = readsReasoningContent(call) ? withReasoningContent : undefined;
      relay = new SseRelay({ detail: plan.detail, includeUsage: plan.includeUsage, model: call.model.model, write, onFirstContent: firstContent, answerModel: plan.answerModel, rewrite });
      return relay;
    },
    async used(cut) {
      const finishReason = cut?.finishReason ?? relay.finishReason() ?? "stop";
      const out = await chatUsed(deps, call, plan, { text: () => relay.text(), usage: relay.usage, finishReason: () => finishReason, names: relay.names, cut: cut !== undefined });
      settled = out.settled;
      return out.used;
    },
    end() {
      let closing = plan.includeUsage && !relay.usage ? sseEvent(usageChunk(settled), answer) : "";
      // FastGPT sends the chat's variables before its closing events, when it has any
      if (plan.detail && hasAny(plan.variables)) closing += sseEvent(plan.variables, "updateVariables");
      closing += sseEvent("[DONE]", answer);
      if (plan.detail) closing += sseEvent([clientReport(call, settled)], "flowResponses");
      return closing;
    },
    error: (err) => sseEvent(err.toBody(), plan.detail ? "error" : undefined),
  };
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
  return sseStream([
    { ...base, choices: [{ index: 0, delta, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: choice?.finish_reason ?? "stop" }], ...(usage ? { usage } : {}) },
  ]);
}

function usageChunk(s: Settled): string {
  return JSON.stringify({
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt_tokens: s.inputTokens, completion_tokens: s.outputTokens, total_tokens: s.inputTokens + s.outputTokens },
  });
}
