// A Responses request → the chat request every upstream is called with (docs/codex.md#what-sluice-reads).
// `instructions` and the leading system/developer items become one first system message (chat
// templates of private models want one system message, first); `function_call` items join the
// assistant message before them as its `tool_calls`, `function_call_output` items become tool
// messages; reasoning items and calls of built-in tools are not sent. With `previous_response_id`
// the pipeline hands the stored conversation in, and it goes first.
import type { ChatMessage, ChatRequest } from "../../chat/request-schema.js";
import { badRequest } from "../../http/errors.js";
import { newId } from "./ids.js";
import { isKnownItem, parseResponsesRequest, type ContentPart, type InputItem, type OutputPart, type ResponsesRequest } from "./request-schema.js";
import { chatName, chatToolChoice, mapTools, type ToolMapping } from "./tools.js";

/** What the answer and stream translations need from the request. */
export interface ResponsesCtx {
  id: string;
  /** unix seconds */
  createdAt: number;
  /** the model the client asked for: answers carry this name */
  model: string;
  stream: boolean;
  store: boolean;
  previousId: string | null;
  tools: ToolMapping;
  /** the request fields the Response object repeats */
  echo: ResponseEcho;
  /** the conversation so far as input items (the previous one's, then this input): what `store` keeps */
  conversation: InputItem[];
}

export interface ResponseEcho {
  instructions: ResponsesRequest["instructions"] | null;
  max_output_tokens: number | null;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: string | null; summary: string | null };
  store: boolean;
  temperature: number;
  text: { format: unknown };
  tool_choice: unknown;
  tools: unknown[];
  top_p: number;
  truncation: string;
  user: string | null;
  metadata: Record<string, unknown>;
}

/** The request translated; `previous` is the stored conversation of `previous_response_id`, if any. */
export function toChat(body: unknown, previous: InputItem[] = [], now = Date.now()): { chat: ChatRequest; ctx: ResponsesCtx } {
  return translateRequest(parseResponsesRequest(body), previous, now);
}

export function translateRequest(req: ResponsesRequest, previous: InputItem[] = [], now = Date.now()): { chat: ChatRequest; ctx: ResponsesCtx } {
  refuseUnsupported(req);
  const input: InputItem[] = typeof req.input === "string" ? [{ type: "message", role: "user", content: req.input }] : req.input;
  const mapping = mapTools(req.tools);
  const { toolChoice, tools } = chatToolChoice(req.tool_choice, mapping);

  // 1. Messages: instructions, the previous conversation, this input
  const instructions = typeof req.instructions === "string" ? [systemItem(req.instructions)] : (req.instructions ?? []);
  const messages = mergeLeadingSystem(toMessages([...instructions, ...previous, ...input], mapping));
  if (!messages.some((m) => m.role !== "system")) {
    throw badRequest("invalid_request", "input: must hold at least one message or tool output", "input");
  }

  // 2. The chat request
  const stream = req.stream === true;
  const chat: ChatRequest = { model: req.model, messages, stream, chatId: undefined };
  if (stream) chat.stream_options = { include_usage: true };
  if (req.max_output_tokens != null) chat.max_tokens = req.max_output_tokens;
  if (req.temperature != null) chat.temperature = req.temperature;
  if (req.top_p != null) chat.top_p = req.top_p;
  if (tools.length > 0) {
    chat.tools = tools;
    if (toolChoice !== undefined) chat.tool_choice = toolChoice;
    if (req.parallel_tool_calls != null) chat.parallel_tool_calls = req.parallel_tool_calls;
  }
  const format = responseFormat(req);
  if (format) chat.response_format = format;
  const effort = req.reasoning?.effort;
  if (effort && effort !== "none") chat.reasoning_effort = effort;
  if (req.user) chat.user = req.user;

  // 3. What the answer needs
  const store = req.store !== false;
  const ctx: ResponsesCtx = {
    id: newId("resp"),
    createdAt: Math.floor(now / 1000),
    model: req.model ?? "",
    stream,
    store,
    previousId: req.previous_response_id ?? null,
    tools: mapping,
    echo: echoOf(req, store),
    conversation: store ? [...previous, ...input.filter((i) => i.type !== "reasoning")] : [],
  };
  return { chat, ctx };
}

/** Fields whose meaning a gateway in front of a chat model cannot give: a 400 that says so. */
function refuseUnsupported(req: ResponsesRequest): void {
  if (req.background === true) throw badRequest("invalid_request", "background: is not supported; send the request without it", "background");
  for (const field of ["conversation", "prompt"] as const) {
    if (req[field] != null) throw badRequest("invalid_request", `${field}: is not supported by this gateway`, field);
  }
}

const systemItem = (text: string): InputItem => ({ type: "message", role: "system", content: text });

type Builder = { messages: ChatMessage[]; openAssistant: ChatMessage | null };

function toMessages(items: InputItem[], mapping: ToolMapping): ChatMessage[] {
  const b: Builder = { messages: [], openAssistant: null };
  items.forEach((item, i) => addItem(b, item, i, mapping));
  return b.messages;
}

function addItem(b: Builder, item: InputItem, index: number, mapping: ToolMapping): void {
  // calls of built-in tools and newer kinds of item: not sent
  if (!isKnownItem(item)) return;
  switch (item.type) {
    case "message": {
      const role = item.role === "developer" ? "system" : item.role;
      const message: ChatMessage = { role, content: chatContent(item.content, index) };
      b.messages.push(message);
      b.openAssistant = role === "assistant" ? message : null;
      return;
    }
    case "function_call":
      return addToolCall(b, item.call_id, chatName(mapping, item.name, item.namespace), item.arguments);
    case "custom_tool_call":
      return addToolCall(b, item.call_id, chatName(mapping, item.name), JSON.stringify({ input: item.input }));
    case "function_call_output":
    case "custom_tool_call_output":
      b.messages.push({ role: "tool", tool_call_id: item.call_id, content: toolOutput(item.output, index) });
      b.openAssistant = null;
      return;
    case "item_reference":
      throw badRequest("invalid_request", `input[${index}]: item references are not supported; send the item itself`, `input[${index}]`);
    case "reasoning":
      // a chat model cannot take its reasoning back
      return;
  }
}

/** Parallel calls are one assistant message with several tool_calls, after its text if it had any. */
function addToolCall(b: Builder, id: string, name: string, args: string): void {
  const call = { id, type: "function", function: { name, arguments: args } };
  if (b.openAssistant) {
    const calls = (b.openAssistant.tool_calls ??= []) as unknown[];
    calls.push(call);
    return;
  }
  b.openAssistant = { role: "assistant", content: null, tool_calls: [call] };
  b.messages.push(b.openAssistant);
}

type ChatContent = ChatMessage["content"];

/** Text-only content as one string (what every chat template reads); images and files as chat parts. */
function chatContent(content: string | ContentPart[], index: number): ChatContent {
  if (typeof content === "string") return content;
  if (content.every((p) => p.type === "input_text" || p.type === "output_text" || p.type === "refusal")) {
    return content.map((p) => ("text" in p ? p.text : (p as { refusal: string }).refusal)).join("\n");
  }
  return content.map((p, j) => chatPart(p, `input[${index}].content[${j}]`));
}

function chatPart(p: ContentPart | OutputPart, param: string): Extract<ChatContent, unknown[]>[number] {
  switch (p.type) {
    case "input_text":
    case "output_text":
      return { type: "text", text: p.text };
    case "refusal":
      return { type: "text", text: p.refusal };
    case "input_image": {
      if (!p.image_url) throw badRequest("invalid_request", `${param}.image_url is required (uploaded files are not supported)`, `${param}.image_url`);
      return { type: "image_url", image_url: p.detail ? { url: p.image_url, detail: p.detail } : { url: p.image_url } };
    }
    case "input_file": {
      if (p.file_data) return { type: "file", file: { file_data: p.file_data, ...(p.filename ? { filename: p.filename } : {}) } };
      if (p.file_url) return { type: "text", text: `[file: ${p.filename ?? p.file_url}](${p.file_url})` };
      throw badRequest("invalid_request", `${param}: needs file_data or file_url (uploaded files are not supported)`, param);
    }
  }
}

function toolOutput(output: string | OutputPart[], index: number): ChatContent {
  if (typeof output === "string") return output;
  if (output.every((p) => p.type === "input_text")) return output.map((p) => p.text).join("\n");
  return output.map((p, j) => chatPart(p, `input[${index}].output[${j}]`));
}

/** The instructions and every system/developer message before the conversation starts, as one. */
function mergeLeadingSystem(messages: ChatMessage[]): ChatMessage[] {
  let n = 0;
  while (n < messages.length && messages[n]!.role === "system" && typeof messages[n]!.content === "string") n++;
  if (n < 2) return messages;
  const text = messages
    .slice(0, n)
    .map((m) => m.content as string)
    .join("\n\n");
  return [{ role: "system", content: text }, ...messages.slice(n)];
}

function responseFormat(req: ResponsesRequest): unknown {
  const format = req.text?.format;
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  const schema: Record<string, unknown> = { name: format.name, schema: format.schema };
  if (format.description != null) schema.description = format.description;
  if (format.strict != null) schema.strict = format.strict;
  return { type: "json_schema", json_schema: schema };
}

function echoOf(req: ResponsesRequest, store: boolean): ResponseEcho {
  return {
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: req.previous_response_id ?? null,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: req.reasoning?.summary ?? null },
    store,
    temperature: req.temperature ?? 1,
    text: { format: req.text?.format ?? { type: "text" } },
    tool_choice: req.tool_choice ?? "auto",
    tools: req.tools ?? [],
    top_p: req.top_p ?? 1,
    truncation: req.truncation ?? "disabled",
    user: req.user ?? null,
    metadata: req.metadata ?? {},
  };
}
