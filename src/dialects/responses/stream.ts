// The upstream's chat.completion.chunk stream → the Responses event stream (docs/codex.md#the-event-stream).
// Every event carries `sequence_number`. Output items open as their first piece arrives — reasoning
// (a summary), text (a message), each tool call (a function_call, once its name is known) — and are
// closed, in order, when the next kind starts or at the end; calls stay open until the end, since
// upstreams may interleave their argument pieces. A freeform (custom) tool's input is the `input`
// of the JSON the model writes: it is sent whole when the call closes. A failure after the first
// byte is answered with `response.failed` and `error`, never `response.completed`.
import type { GatewayError } from "../../http/errors.js";
import { newId } from "./ids.js";
import {
  finishStatus,
  messageItem,
  outputText,
  reasoningItem,
  responseObject,
  responseUsage,
  toolCallItem,
  type ItemStatus,
  type MessageOutput,
  type OutputItem,
  type ReasoningOutput,
  type ResponseObject,
  type ResponseState,
  type ToolCallOutput,
} from "./response-object.js";
import { clientName, customInput } from "./tools.js";
import type { ResponsesCtx } from "./to-chat.js";
import type { ChatChunk, DialectUsage, StreamTranslator } from "./types.js";

type Delta = NonNullable<NonNullable<ChatChunk["choices"]>[number]["delta"]>;
type ToolDelta = NonNullable<Delta["tool_calls"]>[number];

interface OpenText {
  index: number;
  text: string;
  /** the JSON fields that place its deltas (`"item_id":…,"output_index":…`), written once */
  at: string;
}
interface OpenCall {
  index: number;
  id?: string;
  name?: string;
  /** the arguments so far (a function call's open item holds them too) */
  args: string;
  item?: ToolCallOutput;
}

export interface ResponsesStream extends StreamTranslator {
  /** the final Response object once `end` or `fail` ran (what `store` keeps) */
  result(): ResponseObject | undefined;
}

export function createResponsesStream(ctx: ResponsesCtx): ResponsesStream {
  return new ResponsesEvents(ctx);
}

class ResponsesEvents implements ResponsesStream {
  readonly #ctx: ResponsesCtx;
  #seq = 0;
  readonly #output: OutputItem[] = [];
  #reasoning: (OpenText & { item: ReasoningOutput }) | null = null;
  #message: (OpenText & { item: MessageOutput }) | null = null;
  readonly #calls = new Map<number, OpenCall>();
  #final: ResponseObject | undefined;

  constructor(ctx: ResponsesCtx) {
    this.#ctx = ctx;
  }

  result(): ResponseObject | undefined {
    return this.#final;
  }

  begin(): string {
    const response = JSON.stringify(responseObject(this.#ctx, { status: "in_progress", output: [], usage: null }));
    return this.#eventOf("response.created", `"response":${response}`) + this.#eventOf("response.in_progress", `"response":${response}`);
  }

  chunk(chunk: ChatChunk): string {
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) return "";
    let out = "";
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (reasoning) out += this.#reasoningDelta(reasoning);
    if (delta.content) out += this.#textDelta(delta.content);
    for (const call of delta.tool_calls ?? []) out += this.#callDelta(call);
    return out;
  }

  end(finishReason: string, usage: DialectUsage): string {
    const { status, incomplete_details } = finishStatus(finishReason);
    const itemStatus = status === "completed" ? "completed" : "incomplete";
    const closing = this.#closeReasoning() + this.#closeMessage(itemStatus) + this.#closeCalls(itemStatus);
    const type = status === "completed" ? "response.completed" : "response.incomplete";
    const response = this.#finish({ status, output: this.#output, usage: responseUsage(usage), incomplete_details });
    return closing + this.#eventOf(type, `"response":${JSON.stringify(response)}`);
  }

  fail(err: GatewayError): string {
    // items cut short stay in the failed response as they were, marked incomplete
    if (this.#message) this.#message.item.content = [outputText(this.#message.text)];
    if (this.#reasoning) this.#reasoning.item.summary = [{ type: "summary_text", text: this.#reasoning.text }];
    for (const call of this.#calls.values()) if (call.item?.type === "custom_tool_call") call.item.input = customInput(call.args);
    for (const item of this.#output) if ("status" in item && item.status === "in_progress") item.status = "incomplete";
    const response = this.#finish({ status: "failed", output: this.#output, usage: null, error: err });
    return this.#event("response.failed", { response }) + this.#event("error", { code: err.code, message: err.message, param: err.param });
  }

  #finish(state: ResponseState): ResponseObject {
    this.#final = responseObject(this.#ctx, state);
    return this.#final;
  }

  #reasoningDelta(delta: string): string {
    let out = "";
    if (!this.#reasoning) {
      out += this.#closeMessage("completed");
      const item = reasoningItem(newId("rs"), null);
      const index = this.#add(item);
      this.#reasoning = { index, text: "", item, at: placeOf(item.id, index, "summary_index") };
      out += this.#event("response.output_item.added", { output_index: index, item });
      out += this.#event("response.reasoning_summary_part.added", { item_id: item.id, output_index: index, summary_index: 0, part: { type: "summary_text", text: "" } });
    }
    const r = this.#reasoning!;
    r.text += delta;
    return out + this.#delta("response.reasoning_summary_text.delta", r.at, delta, "");
  }

  #closeReasoning(): string {
    const r = this.#reasoning;
    if (!r) return "";
    this.#reasoning = null;
    const part = { type: "summary_text" as const, text: r.text };
    r.item.summary = [part];
    const at = { item_id: r.item.id, output_index: r.index, summary_index: 0 };
    return (
      this.#event("response.reasoning_summary_text.done", { ...at, text: r.text }) +
      this.#event("response.reasoning_summary_part.done", { ...at, part }) +
      this.#event("response.output_item.done", { output_index: r.index, item: r.item })
    );
  }

  #textDelta(delta: string): string {
    let out = "";
    if (!this.#message) {
      out += this.#closeReasoning();
      const item = messageItem(newId("msg"), null, "in_progress");
      const index = this.#add(item);
      this.#message = { index, text: "", item, at: placeOf(item.id, index, "content_index") };
      out += this.#eventOf("response.output_item.added", `"output_index":${index},"item":${JSON.stringify(item)}`);
      out += this.#eventOf("response.content_part.added", `${this.#message.at},"part":${JSON.stringify(outputText(""))}`);
    }
    const m = this.#message!;
    m.text += delta;
    return out + this.#delta("response.output_text.delta", m.at, delta, ',"logprobs":[]');
  }

  #closeMessage(status: ItemStatus): string {
    const m = this.#message;
    if (!m) return "";
    this.#message = null;
    const part = outputText(m.text);
    m.item.content = [part];
    m.item.status = status;
    const partJson = JSON.stringify(part);
    return (
      this.#eventOf("response.output_text.done", `${m.at},"text":${JSON.stringify(m.text)},"logprobs":[]`) +
      this.#eventOf("response.content_part.done", `${m.at},"part":${partJson}`) +
      this.#eventOf("response.output_item.done", `"output_index":${m.index},"item":${JSON.stringify(m.item)}`)
    );
  }

  #callDelta(delta: ToolDelta): string {
    let call = this.#calls.get(delta.index);
    if (!call) {
      call = { index: -1, args: "" };
      this.#calls.set(delta.index, call);
    }
    if (delta.id && !call.id) call.id = delta.id;
    if (delta.function?.name && !call.name) call.name = delta.function.name;
    const args = delta.function?.arguments ?? "";
    call.args += args;
    if (!call.item) return call.name ? this.#openCall(call) : "";
    if (!args || call.item.type !== "function_call") return "";
    call.item.arguments += args;
    return this.#delta("response.function_call_arguments.delta", placeOf(call.item.id, call.index), args, "");
  }

  #openCall(call: OpenCall): string {
    let out = this.#closeReasoning() + this.#closeMessage("completed");
    const item = toolCallItem(call.id ?? newId("call"), clientName(this.#ctx.tools, call.name ?? ""), "", "in_progress");
    call.item = item;
    call.index = this.#add(item);
    out += this.#event("response.output_item.added", { output_index: call.index, item });
    if (call.args && item.type === "function_call") {
      item.arguments = call.args;
      out += this.#event("response.function_call_arguments.delta", { item_id: item.id, output_index: call.index, delta: call.args });
    }
    return out;
  }

  #closeCalls(status: ItemStatus): string {
    let out = "";
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    // a call whose name never came is still the model's call: it opens now, nameless
    for (const call of calls) if (!call.item) out += this.#openCall(call);
    for (const call of calls.sort((a, b) => a.index - b.index)) {
      const item = call.item!;
      item.status = status;
      const at = { item_id: item.id, output_index: call.index };
      if (item.type === "function_call") {
        out += this.#event("response.function_call_arguments.done", { ...at, name: item.name, arguments: item.arguments });
      } else {
        item.input = customInput(call.args);
        out += this.#event("response.custom_tool_call_input.delta", { ...at, delta: item.input });
        out += this.#event("response.custom_tool_call_input.done", { ...at, input: item.input });
      }
      out += this.#event("response.output_item.done", { output_index: call.index, item });
    }
    return out;
  }

  #add(item: OutputItem): number {
    this.#output.push(item);
    return this.#output.length - 1;
  }

  /** A delta event, the hot path of a stream: written as text around the one value that changes. */
  #delta(type: string, at: string, delta: string, tail: string): string {
    return `event: ${type}\ndata: {"type":"${type}","sequence_number":${this.#seq++},${at},"delta":${JSON.stringify(delta)}${tail}}\n\n`;
  }

  #event(type: string, fields: Record<string, unknown>): string {
    const data = JSON.stringify({ type, sequence_number: this.#seq++, ...fields });
    return `event: ${type}\ndata: ${data}\n\n`;
  }

  /** An event whose fields are JSON already (`"name":value,…`). */
  #eventOf(type: string, fields: string): string {
    return `event: ${type}\ndata: {"type":"${type}","sequence_number":${this.#seq++},${fields}}\n\n`;
  }
}

/** `"item_id":"msg_…","output_index":1` and, for a part of the item, `,"content_index":0`. */
function placeOf(itemId: string, index: number, part?: "content_index" | "summary_index"): string {
  return `"item_id":"${itemId}","output_index":${index}${part ? `,"${part}":0` : ""}`;
}
