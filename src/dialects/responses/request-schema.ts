// The Responses API request body (docs/codex.md#what-sluice-reads): the fields a chat model can honour
// are checked; those it cannot (include, prompt_cache_key, client_metadata, service_tier, …) are
// accepted and not forwarded. Input items and tools of kinds a private model cannot use (built-in
// tools and their calls) are accepted too, and left out of the chat request.
import { z } from "zod";
import { listOf, modelName, parseBody } from "../../http/validation.js";

// What one request may hold (docs/api.md#request-bounds): an agent's whole conversation fits
const MAX_ITEMS = 10_000;
const MAX_PARTS = 1000;
const MAX_TOOLS = 1000;

const inputText = z.looseObject({ type: z.literal("input_text"), text: z.string() });
const outputText = z.looseObject({ type: z.literal("output_text"), text: z.string() });
const refusal = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });
const inputImage = z.looseObject({
  type: z.literal("input_image"),
  image_url: z.string().nullish(),
  file_id: z.string().nullish(),
  detail: z.string().nullish(),
});
const inputFile = z.looseObject({
  type: z.literal("input_file"),
  file_data: z.string().nullish(),
  file_url: z.string().nullish(),
  file_id: z.string().nullish(),
  filename: z.string().nullish(),
});
const contentPart = z.discriminatedUnion("type", [inputText, outputText, refusal, inputImage, inputFile]);
const outputPart = z.discriminatedUnion("type", [inputText, inputImage, inputFile]);

const messageItem = z.looseObject({
  type: z.literal("message"),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), listOf(contentPart, MAX_PARTS)]),
});
const functionCallItem = z.looseObject({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
  /** Codex's namespaced tools (`multi_agent_v1`): the call names its function and its namespace */
  namespace: z.string().nullish(),
});
const functionCallOutputItem = z.looseObject({
  type: z.literal("function_call_output"),
  call_id: z.string().min(1),
  output: z.union([z.string(), listOf(outputPart, MAX_PARTS)]),
});
// Freeform ("custom") tools are not offered to a chat model, but a conversation begun elsewhere may hold them.
const customToolCallItem = z.looseObject({
  type: z.literal("custom_tool_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  input: z.string(),
});
const customToolCallOutputItem = z.looseObject({
  type: z.literal("custom_tool_call_output"),
  call_id: z.string().min(1),
  output: z.union([z.string(), listOf(outputPart, MAX_PARTS)]),
});
const itemReference = z.looseObject({ type: z.literal("item_reference"), id: z.string() });
const reasoningItem = z.looseObject({ type: z.literal("reasoning") });

const KNOWN_ITEMS = new Set(["message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "item_reference", "reasoning"]);
/** Calls of built-in tools (web_search_call, local_shell_call, …) and kinds newer than this gateway: not sent upstream. */
// (checked on the whole item, so a known item's own error, one level down, is the one reported)
const otherItem = z.looseObject({ type: z.string() }).refine((i) => !KNOWN_ITEMS.has(i.type), { message: "unexpected item", abort: true });

const knownItem = z.discriminatedUnion("type", [
  messageItem,
  functionCallItem,
  functionCallOutputItem,
  customToolCallItem,
  customToolCallOutputItem,
  itemReference,
  reasoningItem,
]);
/** An item without `type` but with `role` is a message (the API's "easy input message"). */
const inputItem = z.preprocess(
  (v) => (v && typeof v === "object" && !Array.isArray(v) && !("type" in v) && "role" in v ? { type: "message", ...v } : v),
  z.union([knownItem, otherItem]),
);

const functionTool = z.looseObject({
  type: z.literal("function"),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});
/** A freeform tool (Codex's `apply_patch` for OpenAI model names): its input is text, maybe of a grammar. */
const customTool = z.looseObject({
  type: z.literal("custom"),
  name: z.string().min(1),
  description: z.string().nullish(),
  format: z.looseObject({ type: z.string(), syntax: z.string().nullish(), definition: z.string().nullish() }).nullish(),
});
const OFFERED_TOOLS = new Set(["function", "namespace", "custom"]);
const otherTool = z.looseObject({ type: z.string() }).refine((t) => !OFFERED_TOOLS.has(t.type), { message: "unexpected tool", abort: true });
const namespaceTool = z.looseObject({
  type: z.literal("namespace"),
  name: z.string().min(1),
  description: z.string().nullish(),
  tools: listOf(z.union([z.discriminatedUnion("type", [functionTool, customTool]), otherTool]), MAX_TOOLS),
});
const tool = z.union([z.discriminatedUnion("type", [functionTool, namespaceTool, customTool]), otherTool]);

const toolChoice = z.union([
  z.enum(["auto", "none", "required"]),
  z.looseObject({
    type: z.string(),
    name: z.string().nullish(),
    namespace: z.string().nullish(),
    mode: z.enum(["auto", "required"]).nullish(),
    tools: listOf(z.looseObject({ type: z.string(), name: z.string().nullish() }), MAX_TOOLS).nullish(),
  }),
]);

const textFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    name: z.string().min(1),
    schema: z.record(z.string(), z.unknown()),
    description: z.string().nullish(),
    strict: z.boolean().nullish(),
  }),
]);

export const responsesRequestSchema = z.looseObject({
  model: modelName().optional(),
  input: z.union([z.string(), listOf(inputItem, MAX_ITEMS)]),
  instructions: z.union([z.string(), listOf(inputItem, MAX_ITEMS)]).nullish(),
  tools: listOf(tool, MAX_TOOLS).nullish(),
  tool_choice: toolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  text: z.looseObject({ format: textFormat.nullish(), verbosity: z.string().nullish() }).nullish(),
  reasoning: z.looseObject({ effort: z.string().nullish(), summary: z.string().nullish() }).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  user: z.string().nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().min(1).nullish(),
  background: z.boolean().nullish(),
  truncation: z.string().nullish(),
  include: listOf(z.string(), 100).nullish(),
  prompt_cache_key: z.string().nullish(),
});

export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;
export type InputItem = Extract<ResponsesRequest["input"], unknown[]>[number];
/** The items this gateway translates (the rest are left out of the chat request). */
export type KnownItem = z.infer<typeof knownItem>;
export const isKnownItem = (item: InputItem): item is KnownItem => KNOWN_ITEMS.has(item.type);
export type MessageItem = z.infer<typeof messageItem>;
export type ContentPart = z.infer<typeof contentPart>;
export type OutputPart = z.infer<typeof outputPart>;
export type Tool = z.infer<typeof tool>;
export type FunctionTool = z.infer<typeof functionTool>;
export type CustomTool = z.infer<typeof customTool>;
export type ToolChoice = z.infer<typeof toolChoice>;
export type TextFormat = z.infer<typeof textFormat>;

/** The validated request, or a 400 naming the first offending field and what it should be. */
export function parseResponsesRequest(body: unknown): ResponsesRequest {
  return parseBody(responsesRequestSchema, body);
}
