// The upstream's chat.completion.chunk stream → Anthropic's message events (docs/claude-code.md#streams).
// Anthropic clients read one content block at a time (Claude Code acts on a tool_use block when it
// stops), while a chat upstream may interleave reasoning, text and several tool calls. So blocks are
// written one after another: data for another block while a tool call's arguments are still
// incomplete JSON waits, and is written, in arrival order, once that tool call is complete or the
// answer ends. A tool call's later pieces join its block when it opens, wherever they waited.
import { toolInput, type ContentBlock } from "./answer.js";
import { errorEvent } from "./errors.js";
import { messageId, toolUseId } from "./ids.js";
import { stopOf, usageOf } from "./stop.js";
import type { MessagesCtx } from "./to-chat.js";
import type { AnthropicStreamTranslator as StreamTranslator, ChatChunk, DialectUsage } from "./types.js";

interface ToolCall {
  id: string | undefined;
  name: string;
  /** arguments received before the name was known */
  early: string;
  /** arguments written into its block: decides when the call is complete */
  written: string;
  state: "unnamed" | "named" | "open" | "closed";
}

type ToolCallDelta = NonNullable<NonNullable<NonNullable<ChatChunk["choices"]>[number]["delta"]>["tool_calls"]>[number];
type Segment = { kind: "text" | "thinking"; text: string } | { kind: "tool"; call: ToolCall; text: string };
type Block = { kind: "text" | "thinking"; index: number } | { kind: "tool"; index: number; call: ToolCall };

export function createStreamTranslator(ctx: MessagesCtx): StreamTranslator {
  const calls = new Map<number, ToolCall>();
  const waiting: Segment[] = [];
  let open: Block | undefined;
  let nextIndex = 0;
  let hadToolUse = false;
  let stopString: unknown;
  let done = false;
  const id = messageId();
  // a thread keeps the answer (./thread.ts); no other request pays for recording it
  const kept = ctx.thread ? createRecord() : undefined;

  const same = (block: Block | undefined, seg: Segment) =>
    block !== undefined && (block.kind === "tool" ? seg.kind === "tool" && seg.call === block.call : block.kind === seg.kind);
  const blocksOthers = () => open?.kind === "tool" && !isCompleteJson(open.call.written);

  /** A delta event: the hot path, written as a template around the one string that needs escaping. */
  function write(seg: Segment): string {
    if (seg.text.length === 0) return "";
    kept?.add(seg.text);
    const head = `event: content_block_delta\ndata: {"type":"content_block_delta","index":${open!.index},"delta":`;
    if (seg.kind === "tool") {
      seg.call.written += seg.text;
      return `${head}{"type":"input_json_delta","partial_json":${JSON.stringify(seg.text)}}}\n\n`;
    }
    if (seg.kind === "text") return `${head}{"type":"text_delta","text":${JSON.stringify(seg.text)}}}\n\n`;
    return `${head}{"type":"thinking_delta","thinking":${JSON.stringify(seg.text)}}}\n\n`;
  }

  function close(): string {
    if (!open) return "";
    if (open.kind === "tool") open.call.state = "closed";
    const out = event("content_block_stop", { type: "content_block_stop", index: open.index });
    open = undefined;
    return out;
  }

  /** Closes the open block and starts one for `seg`, with every waiting piece of the same tool call. */
  function start(seg: Segment): string {
    let out = close();
    const index = nextIndex++;
    if (seg.kind === "tool") {
      hadToolUse = true;
      seg.call.state = "open";
      open = { kind: "tool", index, call: seg.call };
      const block = { type: "tool_use" as const, id: toolUseId(seg.call.id), name: seg.call.name, input: {} };
      kept?.open(block);
      out += event("content_block_start", { type: "content_block_start", index, content_block: block });
      out += write(seg);
      for (let i = 0; i < waiting.length; ) {
        if (same(open, waiting[i]!)) out += write(waiting.splice(i, 1)[0]!);
        else i++;
      }
      return out;
    }
    open = { kind: seg.kind, index };
    const block: ContentBlock = seg.kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" };
    kept?.open(block);
    return out + event("content_block_start", { type: "content_block_start", index, content_block: block }) + write(seg);
  }

  /** Writes waiting pieces in order while the open block lets them (`force`: the answer is over). */
  function drain(force = false): string {
    let out = "";
    while (waiting.length > 0) {
      const seg = waiting[0]!;
      if (!same(open, seg) && !force && blocksOthers()) break;
      waiting.shift();
      out += same(open, seg) ? write(seg) : start(seg);
    }
    return out;
  }

  function deliver(seg: Segment): string {
    // a tool call's pieces never wait behind others once its block is open; text keeps its order
    if (same(open, seg) && (seg.kind === "tool" || waiting.length === 0)) {
      const out = write(seg);
      return waiting.length > 0 ? out + drain() : out;
    }
    waiting.push(seg);
    return drain();
  }

  function toolDelta(delta: ToolCallDelta[]): string {
    let out = "";
    for (const d of delta) {
      let call = calls.get(d.index);
      if (!call) calls.set(d.index, (call = { id: undefined, name: "", early: "", written: "", state: "unnamed" }));
      if (d.id && call.id === undefined) call.id = d.id;
      const args = d.function?.arguments ?? "";
      if (call.state === "closed") continue; // past its complete JSON: nothing valid can follow
      if (call.state === "unnamed") {
        // servers send the name whole in the first piece; pieces before a name are kept for the block
        call.name += d.function?.name ?? "";
        call.early += args;
        if (!call.name) continue;
        call.state = "named";
        out += deliver({ kind: "tool", call, text: call.early });
        continue;
      }
      out += deliver({ kind: "tool", call, text: args });
    }
    return out;
  }

  return {
    begin(inputTokens = 0) {
      const message = { id, type: "message", role: "assistant", model: ctx.model, content: [], stop_reason: null, stop_sequence: null, usage: usageOf(inputTokens, 0) };
      return event("message_start", { type: "message_start", message }) + PING;
    },

    chunk(chunk) {
      const choice = chunk.choices?.[0];
      if (done || !choice) return "";
      if (choice.stop_reason != null) stopString = choice.stop_reason;
      const delta = choice.delta;
      if (!delta) return "";
      let out = "";
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (reasoning) out += deliver({ kind: "thinking", text: reasoning });
      if (delta.content) out += deliver({ kind: "text", text: delta.content });
      if (delta.tool_calls?.length) out += toolDelta(delta.tool_calls);
      return out;
    },

    end(finishReason, usage: DialectUsage) {
      if (done) return "";
      done = true;
      const out = drain(true) + close();
      const stop = stopOf(finishReason, hadToolUse, stopString, ctx);
      // the cached share is known only now: message_delta carries it (message_start said 0)
      const { input_tokens, output_tokens, cache_read_input_tokens } = usageOf(usage.input, usage.output, usage.cached);
      return out + event("message_delta", { type: "message_delta", delta: stop, usage: { input_tokens, output_tokens, cache_read_input_tokens } }) + event("message_stop", { type: "message_stop" });
    },

    fail(err) {
      if (done) return "";
      done = true;
      return errorEvent(err);
    },

    heartbeat: () => (done ? "" : PING),

    result: () => (kept && done ? { id, content: kept.blocks() } : undefined),
  };
}

/** The answer's blocks as they are written: a tool call's input is parsed once it is over. */
function createRecord() {
  const blocks: Array<{ block: ContentBlock; text: string }> = [];
  return {
    open: (block: ContentBlock) => void blocks.push({ block, text: "" }),
    add(text: string) {
      const last = blocks.at(-1);
      if (last) last.text += text;
    },
    blocks: (): ContentBlock[] =>
      blocks.map(({ block, text }) => {
        if (block.type === "tool_use") return { ...block, input: toolInput(text) };
        return block.type === "text" ? { ...block, text } : { ...block, thinking: text };
      }),
  };
}

const PING = 'event: ping\ndata: {"type":"ping"}\n\n';

function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Whether a tool call's arguments so far are a whole JSON value (the cheap test first: a complete
 *  object ends with "}"). */
function isCompleteJson(text: string): boolean {
  const trimmed = text.trimEnd();
  if (!trimmed.endsWith("}")) return false;
  try {
    JSON.parse(trimmed);
    return true;
  } catch {
    return false;
  }
}
