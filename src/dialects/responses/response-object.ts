// The Response object and its output items, shared by the whole answer, the stream's events and the
// stored copy (docs/codex.md#what-sluice-answers). Usage always carries both detail objects with
// their counts: Codex refuses a `response.completed` whose `input_tokens_details` lacks `cached_tokens`.
import type { GatewayError } from "../../http/errors.js";
import { newId } from "./ids.js";
import { customInput, type ClientToolName } from "./tools.js";
import type { ResponsesCtx } from "./to-chat.js";
import type { DialectUsage } from "./types.js";

export type ItemStatus = "in_progress" | "completed" | "incomplete";

export interface OutputText {
  type: "output_text";
  text: string;
  annotations: unknown[];
  logprobs: unknown[];
}

export interface MessageOutput {
  id: string;
  type: "message";
  status: ItemStatus;
  role: "assistant";
  content: OutputText[];
}

export interface FunctionCallOutput {
  id: string;
  type: "function_call";
  status: ItemStatus;
  call_id: string;
  name: string;
  namespace?: string;
  arguments: string;
}

export interface CustomToolCallOutput {
  id: string;
  type: "custom_tool_call";
  status: ItemStatus;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
}

export type ToolCallOutput = FunctionCallOutput | CustomToolCallOutput;

export interface ReasoningOutput {
  id: string;
  type: "reasoning";
  summary: Array<{ type: "summary_text"; text: string }>;
}

export type OutputItem = MessageOutput | ToolCallOutput | ReasoningOutput;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: string } | null;
  model: string;
  output: OutputItem[];
  usage: ResponseUsage | null;
  [echoed: string]: unknown;
}

export const outputText = (text: string): OutputText => ({ type: "output_text", text, annotations: [], logprobs: [] });

export function messageItem(id: string, text: string | null, status: ItemStatus): MessageOutput {
  return { id, type: "message", status, role: "assistant", content: text === null ? [] : [outputText(text)] };
}

/** The model's call of the client's tool `name`: a function_call, or a custom_tool_call for a freeform tool. */
export function toolCallItem(callId: string, name: ClientToolName, args: string, status: ItemStatus): ToolCallOutput {
  const item: ToolCallOutput = name.custom
    ? { id: newId("ctc"), type: "custom_tool_call", status, call_id: callId, name: name.name, input: customInput(args) }
    : { id: newId("fc"), type: "function_call", status, call_id: callId, name: name.name, arguments: args };
  if (name.namespace) item.namespace = name.namespace;
  return item;
}

export function reasoningItem(id: string, summary: string | null): ReasoningOutput {
  return { id, type: "reasoning", summary: summary === null ? [] : [{ type: "summary_text", text: summary }] };
}

export function responseUsage(usage: DialectUsage): ResponseUsage {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cached ?? 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
    total_tokens: usage.input + usage.output,
  };
}

/** `length` is the only finish that leaves the answer unfinished for the client (and content_filter). */
export function finishStatus(finishReason: string | null | undefined): { status: "completed" | "incomplete"; incomplete_details: { reason: string } | null } {
  if (finishReason === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finishReason === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

export interface ResponseState {
  status: ResponseStatus;
  output: OutputItem[];
  usage: ResponseUsage | null;
  incomplete_details?: { reason: string } | null;
  error?: GatewayError;
}

export function responseObject(ctx: ResponsesCtx, state: ResponseState): ResponseObject {
  return {
    id: ctx.id,
    object: "response",
    created_at: ctx.createdAt,
    status: state.status,
    error: state.error ? { code: state.error.code, message: state.error.message } : null,
    incomplete_details: state.incomplete_details ?? null,
    model: ctx.model,
    output: state.output,
    usage: state.usage,
    ...ctx.echo,
  };
}
