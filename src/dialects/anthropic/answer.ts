// The upstream's whole chat.completion → an Anthropic message (docs/claude-code.md#answers):
// reasoning as a thinking block, the text, each tool call as a tool_use block.
import type { CompletionJson } from "../../chat/attempt.js";
import { messageId, toolUseId } from "./ids.js";
import { stopOf, usageOf, type Stop } from "./stop.js";
import type { MessagesCtx } from "./to-chat.js";
import type { DialectUsage } from "./types.js";

export type ContentBlock =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicMessageAnswer extends Stop {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: ContentBlock[];
  usage: ReturnType<typeof usageOf>;
}

/** What an upstream's message may hold beyond CompletionJson's declared fields. */
interface UpstreamMessage {
  content?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }> | null;
}

export function toAnswer(completion: CompletionJson, usage: DialectUsage, ctx: MessagesCtx): AnthropicMessageAnswer {
  const choice = completion.choices[0] as (CompletionJson["choices"][number] & { stop_reason?: unknown }) | undefined;
  const message = (choice?.message ?? {}) as UpstreamMessage;
  const content: ContentBlock[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  // an empty thinking signature: Sluice cannot sign, and clients only send it back (it is dropped then)
  if (reasoning) content.push({ type: "thinking", thinking: reasoning, signature: "" });
  if (message.content) content.push({ type: "text", text: message.content });
  for (const call of message.tool_calls ?? []) {
    if (!call.function?.name) continue;
    content.push({ type: "tool_use", id: toolUseId(call.id), name: call.function.name, input: toolInput(call.function.arguments) });
  }
  const hadToolUse = content.some((b) => b.type === "tool_use");
  return {
    id: messageId(),
    type: "message",
    role: "assistant",
    model: ctx.model,
    content,
    ...stopOf(choice?.finish_reason, hadToolUse, choice?.stop_reason, ctx),
    usage: usageOf(usage.input, usage.output, usage.cached),
  };
}

/**
 * A whole answer's `input` must be an object. Arguments the model double-encoded (a JSON string
 * holding the object) are read through; arguments that are not a JSON object become `{}`, and the
 * client's own check of the tool's required fields tells the model what was missing. (A streamed
 * answer passes the model's text as it is: docs/claude-code.md#tool-calls.)
 */
export function toolInput(args: string | undefined): Record<string, unknown> {
  let value = parseJson(args);
  if (typeof value === "string") value = parseJson(value);
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function parseJson(text: string | undefined): unknown {
  if (!text || !text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
