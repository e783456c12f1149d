// The Anthropic Messages request body (docs/claude-code.md#what-claude-code-sends). Fields Sluice
// uses are checked; fields a chat model cannot honour (thinking, context_management, output_config,
// cache_control, container, mcp_servers, service_tier, …) are accepted as they come and not
// forwarded. Block types Sluice does not know are kept loose and dropped by the translation: a newer
// client's block must not turn a working conversation into a 400.
import { z } from "zod";
import { RawText } from "../../json/raw-text.js";
import { listOf, MAX_STOP_LENGTH, modelName, parseBody } from "../../http/validation.js";

// What one request may hold (docs/api.md#request-bounds): an agent's whole conversation fits
const MAX_MESSAGES = 10_000;
const MAX_BLOCKS = 1000;
const MAX_TOOLS = 1000;
const MAX_STOP_SEQUENCES = 16;

const text = z.looseObject({ type: z.literal("text"), text: z.string() });
const base64Source = z.looseObject({ type: z.literal("base64"), media_type: z.string().min(1), data: z.string() });
const urlSource = z.looseObject({ type: z.literal("url"), url: z.string().min(1) });
const otherSource = z.looseObject({ type: z.enum(["file", "text", "content"]) });
const image = z.looseObject({ type: z.literal("image"), source: z.discriminatedUnion("type", [base64Source, urlSource, otherSource]) });
const document = z.looseObject({ type: z.literal("document"), source: z.looseObject({ type: z.string() }).optional(), title: z.string().nullish() });
const toolUse = z.looseObject({ type: z.literal("tool_use"), id: z.string().min(1), name: z.string().min(1), input: z.unknown() });
const thinking = z.looseObject({ type: z.enum(["thinking", "redacted_thinking"]) });

/** Blocks of a type outside `known` become `{type: "other", was}` before validation: accepted, and
 *  dropped by the translation (server_tool_use, web_search_tool_result, container_upload, …); `was`
 *  lets a thread refuse what it cannot leave out (./thread.ts). */
function withOthers<const T extends readonly [z.core.$ZodTypeDiscriminable, ...z.core.$ZodTypeDiscriminable[]]>(known: readonly string[], options: T) {
  const other = z.object({ type: z.literal("other"), was: z.string() });
  const mapped = (b: unknown) => {
    const type = (b as { type?: unknown } | null)?.type;
    return typeof type === "string" && !known.includes(type) ? { type: "other", was: type } : b;
  };
  return z.preprocess(mapped, z.discriminatedUnion("type", [...options, other]));
}

/** What a tool_result may hold: text, images, documents; anything else is dropped. */
const resultBlock = withOthers(["text", "image", "document"], [text, image, document]);
const toolResult = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), listOf(resultBlock, MAX_BLOCKS)]).nullish(),
  is_error: z.boolean().nullish(),
});

const BLOCKS = ["text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"];
const block = withOthers(BLOCKS, [text, image, document, toolUse, toolResult, thinking]);

const message = z.looseObject({
  role: z.enum(["user", "assistant", "system"]),
  // a long content of a large body may still be the client's bytes (src/json/raw-text.ts)
  content: z.union([z.string(), z.custom<RawText>((v) => v instanceof RawText), listOf(block, MAX_BLOCKS)]),
});

/** A tool the client runs: `name` + `input_schema`. Anthropic-defined tools (`web_search_*`,
 *  `bash_*`, `code_execution_*`, …) carry a `type` and no schema: not offered to a chat model. */
const customTool = z.looseObject({
  type: z.literal("custom"),
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.looseObject({}),
  strict: z.boolean().optional(),
});
const tool = z.preprocess(
  (t) => {
    if (t === null || typeof t !== "object" || Array.isArray(t)) return t;
    const type = (t as { type?: unknown }).type;
    return type === undefined ? { ...t, type: "custom" } : typeof type === "string" && type !== "custom" ? { type: "anthropic_defined" } : t;
  },
  z.discriminatedUnion("type", [customTool, z.object({ type: z.literal("anthropic_defined") })]),
);

const toolChoice = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("auto"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("any"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("tool"), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("none") }),
]);

export const messagesRequestSchema = z.looseObject({
  model: modelName(),
  max_tokens: z.number().int().positive(),
  messages: listOf(message, MAX_MESSAGES, 1),
  system: z.union([z.string(), z.custom<RawText>((v) => v instanceof RawText), listOf(text, MAX_BLOCKS)]).optional(),
  tools: listOf(tool, MAX_TOOLS).optional(),
  tool_choice: toolChoice.optional(),
  stop_sequences: listOf(z.string().max(MAX_STOP_LENGTH), MAX_STOP_SEQUENCES).optional(),
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  top_k: z.number().int().optional(),
  stream: z.boolean().optional(),
  metadata: z.looseObject({}).optional(),
  // message threads (docs/claude-code.md#message-threads): a type Sluice does not know is refused
  // there, not here, with the refusal the SDK falls back on
  thread: z.looseObject({ type: z.string(), previous_message_id: z.string().min(1).max(200).optional() }).nullish(),
});

/** count_tokens takes the same body without `max_tokens` (Claude Code sends none). */
export const countTokensRequestSchema = messagesRequestSchema.extend({ max_tokens: z.number().int().positive().optional() });

export type MessagesRequest = z.infer<typeof messagesRequestSchema>;
export type CountTokensRequest = z.infer<typeof countTokensRequestSchema>;
export type AnthropicMessage = MessagesRequest["messages"][number];
export type AnthropicBlock = Extract<AnthropicMessage["content"], unknown[]>[number];
export type ToolResultBlock = z.infer<typeof toolResult>;
export type ImageBlock = z.infer<typeof image>;
export type DocumentBlock = z.infer<typeof document>;
export type AnthropicTool = NonNullable<MessagesRequest["tools"]>[number];
export type ToolChoice = z.infer<typeof toolChoice>;
export type ThreadParam = NonNullable<MessagesRequest["thread"]>;

/** The validated body, or a 400 naming the first offending field. */
export function parseMessagesRequest(body: unknown): MessagesRequest {
  return parseBody(messagesRequestSchema, body);
}

export function parseCountTokensRequest(body: unknown): CountTokensRequest {
  return parseBody(countTokensRequestSchema, body);
}
