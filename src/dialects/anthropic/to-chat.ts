// Anthropic Messages request → chat request (docs/claude-code.md#how-sluice-serves-it). The chat
// request is what the chat path limits, meters and sends upstream (`top_k` too: it reaches a model
// that lists it in `passThrough`); the context keeps what the answer translation needs (the model
// name the client asked for, the stop sequences).
import type { ChatMessage, ChatRequest } from "../../chat/request-schema.js";
import { badRequest } from "../../http/errors.js";
import { RawText } from "../../json/raw-text.js";
import { chatToolCallId } from "./ids.js";
import type { ThreadCtx } from "./thread.js";
import {
  parseMessagesRequest,
  type AnthropicMessage,
  type AnthropicTool,
  type CountTokensRequest,
  type DocumentBlock,
  type ImageBlock,
  type MessagesRequest,
  type ToolChoice,
  type ToolResultBlock,
} from "./request-schema.js";

export interface MessagesCtx {
  /** the model name the client asked for: the answer carries it */
  model: string;
  stream: boolean;
  /** the request's stop sequences: a vLLM `stop_reason` naming one is reported as `stop_sequence` */
  stopSequences: string[];
  /** a message thread's request: its answer is kept under its id (./thread.ts) */
  thread?: ThreadCtx;
}

type TextPart = { type: "text"; text: string };
type ImagePart = { type: "image_url"; image_url: { url: string } };
type UserPart = TextPart | ImagePart;
type ToolCall = { id: string; type: "function"; function: { name: string; arguments: string } };

/** Claude Code's first system block: Anthropic's billing tag, not an instruction, and it changes
 *  with the client's version — a model's prompt cache should not start with it. */
const BILLING_HEADER = "x-anthropic-billing-header:";

/** Request translation: a 400 naming the field for bad input. */
export function toChat(body: unknown): { chat: ChatRequest; ctx: MessagesCtx } {
  return buildChat(parseMessagesRequest(body));
}

/** The chat request of a validated body (`max_tokens` absent only in a count_tokens body). */
export function buildChat(req: CountTokensRequest): { chat: ChatRequest; ctx: MessagesCtx } {
  const messages: ChatMessage[] = [];
  const system = systemText(req.system);
  if (system) messages.push({ role: "system", content: system });
  req.messages.forEach((m, i) => messages.push(...translateMessage(m, i)));

  // chatId, detail and variables stay chat-only
  const chat: ChatRequest = { model: req.model, messages, stream: req.stream ?? false, chatId: undefined };
  if (req.max_tokens !== undefined) chat.max_tokens = req.max_tokens;
  if (req.temperature !== undefined) chat.temperature = req.temperature;
  if (req.top_p !== undefined) chat.top_p = req.top_p;
  if (req.top_k !== undefined) chat.top_k = req.top_k;
  if (req.stop_sequences?.length) chat.stop = req.stop_sequences;
  addTools(chat, req.tools, req.tool_choice);
  const ctx: MessagesCtx = { model: req.model, stream: chat.stream === true, stopSequences: req.stop_sequences ?? [] };
  return { chat, ctx };
}

function systemText(system: MessagesRequest["system"]): string | RawText | undefined {
  if (system === undefined || typeof system === "string" || system instanceof RawText) return system || undefined;
  const texts = system.map((b) => b.text).filter((t) => !t.startsWith(BILLING_HEADER));
  return texts.join("\n") || undefined;
}

/** One Anthropic message as chat messages: a user turn's tool results become tool messages, followed
 *  by a user message with whatever else it held. */
function translateMessage(m: AnthropicMessage, i: number): ChatMessage[] {
  if (typeof m.content === "string" || m.content instanceof RawText) return [{ role: m.role, content: m.content }];
  if (m.role === "system") return [{ role: "system", content: textOf(m.content) }];
  if (m.role === "assistant") return [assistantMessage(m.content)];

  const tools: ChatMessage[] = [];
  const parts: UserPart[] = [];
  const trailing: UserPart[] = []; // images of tool results: a tool message holds text only
  m.content.forEach((block, j) => {
    const at = `messages[${i}].content[${j}]`;
    if (block.type === "text") parts.push({ type: "text", text: (block as TextPart).text });
    else if (block.type === "image") parts.push(imagePart(block as ImageBlock, at));
    else if (block.type === "document") parts.push({ type: "text", text: documentText(block as DocumentBlock) });
    else if (block.type === "tool_result") tools.push(toolMessage(block as ToolResultBlock, trailing, at));
  });
  const rest = [...trailing, ...parts];
  if (rest.length === 0 && tools.length > 0) return tools;
  return [...tools, { role: "user", content: rest.some((p) => p.type === "image_url") ? rest : joinText(rest) }];
}

function assistantMessage(blocks: Extract<AnthropicMessage["content"], unknown[]>): ChatMessage {
  const texts: string[] = [];
  const calls: ToolCall[] = [];
  for (const block of blocks) {
    if (block.type === "text") texts.push((block as TextPart).text);
    else if (block.type === "tool_use") {
      const use = block as { id: string; name: string; input: unknown };
      calls.push({ id: chatToolCallId(use.id), type: "function", function: { name: use.name, arguments: JSON.stringify(use.input ?? {}) } });
    }
    // thinking, redacted_thinking and server tool blocks are the client's record, not the model's input
  }
  const content = texts.join("\n");
  if (calls.length === 0) return { role: "assistant", content };
  return { role: "assistant", content: content || null, tool_calls: calls };
}

function toolMessage(block: ToolResultBlock, trailing: UserPart[], at: string): ChatMessage {
  let text = "";
  if (typeof block.content === "string") text = block.content;
  else if (block.content) {
    const texts: string[] = [];
    block.content.forEach((b, k) => {
      if (b.type === "text") texts.push((b as TextPart).text);
      else if (b.type === "image") trailing.push(imagePart(b as ImageBlock, `${at}.content[${k}]`));
      else if (b.type === "document") texts.push(documentText(b as DocumentBlock));
    });
    text = texts.join("\n");
  }
  // the model must know the call failed; Claude Code's own failures already say so
  if (block.is_error && !/^\s*(<tool_use_error>|error\b)/i.test(text)) text = `Error: ${text}`;
  return { role: "tool", tool_call_id: chatToolCallId(block.tool_use_id), content: text };
}

function imagePart(block: ImageBlock, at: string): ImagePart {
  const source = block.source;
  if (source.type === "base64") {
    const { media_type, data } = source as { media_type: string; data: string };
    return { type: "image_url", image_url: { url: `data:${media_type};base64,${data}` } };
  }
  if (source.type === "url") return { type: "image_url", image_url: { url: (source as { url: string }).url } };
  throw badRequest("invalid_request", `${at}.source: images from the Files API are not supported; send base64 data or a URL.`, `${at}.source`);
}

/** A plain-text document as its text; any other (PDF, file) as a line saying it was left out, so
 *  the model can tell the user rather than answer as if it had read it. */
function documentText(block: DocumentBlock): string {
  const title = block.title ? `${block.title}\n` : "";
  const source = block.source as { type: string; data?: unknown; content?: unknown } | undefined;
  if (source?.type === "text" && typeof source.data === "string") return title + source.data;
  if (source?.type === "content") {
    if (typeof source.content === "string") return title + source.content;
    if (Array.isArray(source.content)) return title + textOf(source.content as Array<{ type: string; text?: unknown }>);
  }
  return `[document${block.title ? ` "${block.title}"` : ""} left out: this model reads text only]`;
}

function textOf(blocks: Array<{ type: string; text?: unknown }>): string {
  return blocks.flatMap((b) => (b.type === "text" && typeof b.text === "string" ? [b.text] : [])).join("\n");
}

function joinText(parts: UserPart[]): string {
  return parts.map((p) => (p as TextPart).text).join("\n");
}

function addTools(chat: ChatRequest, tools: AnthropicTool[] | undefined, choice: ToolChoice | undefined): void {
  const functions = (tools ?? []).flatMap((t) => {
    if (t.type !== "custom") return [];
    const fn: Record<string, unknown> = { name: t.name, parameters: t.input_schema };
    if (typeof t.description === "string") fn.description = t.description;
    if (typeof t.strict === "boolean") fn.strict = t.strict;
    return [{ type: "function" as const, function: fn }];
  });
  // a tool choice without tools is refused by chat servers: with no tool left, neither is sent
  if (functions.length === 0) return;
  chat.tools = functions;
  if (!choice) return;
  if (choice.type === "auto") chat.tool_choice = "auto";
  else if (choice.type === "any") chat.tool_choice = "required";
  else if (choice.type === "none") chat.tool_choice = "none";
  else chat.tool_choice = { type: "function", function: { name: choice.name } };
  if ("disable_parallel_tool_use" in choice && choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
}
