// Why the answer ended, in Anthropic's words (docs/claude-code.md#answers), shared by the whole and
// the streamed answer.
import type { MessagesCtx } from "./to-chat.js";

export type StopReason = "end_turn" | "max_tokens" | "tool_use" | "stop_sequence";

export interface Stop {
  stop_reason: StopReason;
  stop_sequence: string | null;
}

/**
 * `finishReason` is the upstream's; `stopString` is vLLM's `stop_reason` (the stop string that
 * matched, when one did). A `content_filter` is an `end_turn`: `refusal` would make Claude Code
 * blame Anthropic's usage policy for a private model's filter.
 */
export function stopOf(finishReason: string | null | undefined, hadToolUse: boolean, stopString: unknown, ctx: MessagesCtx): Stop {
  if (finishReason === "length") return { stop_reason: "max_tokens", stop_sequence: null };
  // some servers end a tool call with "stop": the client must still run the tool
  if (finishReason === "tool_calls" || finishReason === "function_call" || hadToolUse) return { stop_reason: "tool_use", stop_sequence: null };
  if (typeof stopString === "string" && ctx.stopSequences.includes(stopString)) return { stop_reason: "stop_sequence", stop_sequence: stopString };
  return { stop_reason: "end_turn", stop_sequence: null };
}

/** Anthropic's usage object (never without its cache counts: clients add them up). As Anthropic
 *  counts, `input_tokens` is the uncached rest and the engine's prefix-cache hits are
 *  `cache_read_input_tokens` (docs/routing.md#cached-tokens); nothing is written to a cache on request. */
export function usageOf(input: number, output: number, cached = 0) {
  const read = Math.min(Math.max(0, cached), input);
  return { input_tokens: input - read, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: read };
}
