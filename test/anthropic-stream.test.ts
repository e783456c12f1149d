// The Anthropic stream translation: chat.completion chunks → message events, checked for Anthropic's
// block order and read back by the real Anthropic SDK (its MessageStream accumulator) over a socket.
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStreamTranslator } from "../src/dialects/anthropic/stream.js";
import type { MessagesCtx } from "../src/dialects/anthropic/to-chat.js";
import type { ChatChunk } from "../src/dialects/anthropic/types.js";
import { GatewayError } from "../src/http/errors.js";
import { streamCut } from "../src/upstream/errors.js";
import { startProbe, type Probe } from "./support/anthropic-probe.js";
import { textChunks, toolCallChunks } from "./support/scripted-upstream.js";
import { parseSse } from "./support/sse.js";

const ctx = (over: Partial<MessagesCtx> = {}): MessagesCtx => ({ model: "claude-test", stream: true, stopSequences: [], ...over });
const delta = (d: NonNullable<NonNullable<ChatChunk["choices"]>[number]["delta"]>): ChatChunk => ({ choices: [{ index: 0, delta: d }] });

function translate(chunks: ChatChunk[], finish = "stop", c: MessagesCtx = ctx(), usage = { input: 7, output: 11 }): string {
  const t = createStreamTranslator(c);
  return t.begin(7) + chunks.map((ch) => t.chunk(ch)).join("") + t.end(finish, usage);
}

type Event = { event: string; data: Record<string, any> };
function events(text: string): Event[] {
  return parseSse(text).map((f) => ({ event: f.event!, data: JSON.parse(f.data) }));
}

/** Anthropic's order: message_start, then blocks one at a time (start, deltas, stop) with indexes
 *  0, 1, 2 …, then message_delta and message_stop. */
function expectWellFormed(list: Event[]): void {
  expect(list[0]!.event).toBe("message_start");
  let open: number | undefined;
  let next = 0;
  for (const { event, data } of list.slice(1, -2)) {
    if (event === "ping") continue;
    expect(data.type).toBe(event);
    if (event === "content_block_start") {
      expect(open).toBeUndefined();
      expect(data.index).toBe(next++);
      open = data.index;
    } else if (event === "content_block_delta") {
      expect(data.index).toBe(open);
    } else if (event === "content_block_stop") {
      expect(data.index).toBe(open);
      open = undefined;
    } else throw new Error(`unexpected ${event}`);
  }
  expect(open).toBeUndefined();
  expect(list.slice(-2).map((e) => e.event)).toEqual(["message_delta", "message_stop"]);
}

let probe: Probe;
let sse = "";
let client: Anthropic;
beforeAll(async () => {
  probe = await startProbe(() => ({ kind: "sse", text: sse }));
  client = new Anthropic({ baseURL: probe.url, apiKey: "test-key", maxRetries: 0 });
});
afterAll(() => probe.close());

/** What the real SDK makes of `text` when a server streams it. */
function sdkRead(text: string) {
  sse = text;
  return client.messages.stream({ model: "claude-test", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }).finalMessage();
}

describe("Anthropic stream translation", () => {
  it("streams a text answer the SDK reads back whole, with the model the client asked for and the usage", async () => {
    const text = translate(textChunks("Hello from a private model", 4));
    expectWellFormed(events(text));
    const message = await sdkRead(text);
    expect(message.id).toMatch(/^msg_[A-Za-z0-9]{24}$/);
    expect(message.model).toBe("claude-test");
    expect(message.content).toEqual([{ type: "text", text: "Hello from a private model" }]);
    expect(message.stop_reason).toBe("end_turn");
    expect(message.usage).toMatchObject({ input_tokens: 7, output_tokens: 11 });
  });

  it("turns upstream reasoning (reasoning_content or reasoning) into a thinking block before the text", async () => {
    const chunks = [delta({ reasoning_content: "First, " }), delta({ reasoning: "think." }), delta({ content: "Answer." })];
    const text = translate(chunks);
    expectWellFormed(events(text));
    const message = await sdkRead(text);
    expect(message.content).toEqual([
      { type: "thinking", thinking: "First, think.", signature: "" },
      { type: "text", text: "Answer." },
    ]);
  });

  it("gives each tool call its own tool_use block with the upstream's id kept, and stop_reason tool_use", async () => {
    const chunks = [
      ...textChunks("Let me look.", 2),
      ...toolCallChunks(0, "call_a1", "Bash", { command: "ls -la" }),
      ...toolCallChunks(1, "chatcmpl-tool-9f", "Read", { file_path: "/tmp/x.txt" }),
    ];
    const text = translate(chunks, "tool_calls");
    expectWellFormed(events(text));
    const message = await sdkRead(text);
    expect(message.content).toEqual([
      { type: "text", text: "Let me look." },
      { type: "tool_use", id: "toolu_call_a1", name: "Bash", input: { command: "ls -la" } },
      { type: "tool_use", id: "toolu_chatcmpl-tool-9f", name: "Read", input: { file_path: "/tmp/x.txt" } },
    ]);
    expect(message.stop_reason).toBe("tool_use");
  });

  it("writes interleaved tool calls one block after another, each with all of its arguments", async () => {
    const a = JSON.stringify({ command: "echo one" });
    const b = JSON.stringify({ command: "echo two" });
    const tc = (index: number, f: { name?: string; arguments?: string }, id?: string) => delta({ tool_calls: [{ index, ...(id ? { id } : {}), function: f }] });
    const chunks = [
      tc(0, { name: "Bash", arguments: "" }, "c0"),
      tc(1, { name: "Bash", arguments: "" }, "c1"),
      tc(0, { arguments: a.slice(0, 8) }),
      tc(1, { arguments: b.slice(0, 5) }),
      tc(1, { arguments: b.slice(5) }),
      tc(0, { arguments: a.slice(8) }),
    ];
    const list = events(translate(chunks, "tool_calls"));
    expectWellFormed(list);
    const message = await sdkRead(translate(chunks, "tool_calls"));
    expect(message.content).toEqual([
      { type: "tool_use", id: "toolu_c0", name: "Bash", input: { command: "echo one" } },
      { type: "tool_use", id: "toolu_c1", name: "Bash", input: { command: "echo two" } },
    ]);
    // the first call's arguments were streamed as they came, not held back
    const firstDeltas = list.filter((e) => e.event === "content_block_delta" && e.data.index === 0);
    expect(firstDeltas.map((e) => e.data.delta.partial_json)).toEqual([a.slice(0, 8), a.slice(8)]);
  });

  it("holds text that comes while a tool call's arguments are incomplete, and writes it after that call", async () => {
    const chunks = [
      delta({ tool_calls: [{ index: 0, id: "t0", function: { name: "Bash", arguments: '{"command":' } }] }),
      delta({ content: "meanwhile" }),
      delta({ tool_calls: [{ index: 0, function: { arguments: ' "pwd"}' } }] }),
    ];
    const text = translate(chunks, "tool_calls");
    expectWellFormed(events(text));
    const message = await sdkRead(text);
    expect(message.content).toEqual([
      { type: "tool_use", id: "toolu_t0", name: "Bash", input: { command: "pwd" } },
      { type: "text", text: "meanwhile" },
    ]);
  });

  it("opens a tool block once the name is known and gives a call without an upstream id a toolu_ id", async () => {
    const chunks = [
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }),
      delta({ tool_calls: [{ index: 0, function: { name: "Calc", arguments: "1}" } }] }),
    ];
    const list = events(translate(chunks, "tool_calls"));
    expectWellFormed(list);
    const start = list.find((e) => e.event === "content_block_start")!;
    expect(start.data.content_block).toMatchObject({ type: "tool_use", name: "Calc", input: {} });
    expect(start.data.content_block.id).toMatch(/^toolu_[A-Za-z0-9]{24}$/);
    const message = await sdkRead(translate(chunks, "tool_calls"));
    expect(message.content[0]).toMatchObject({ type: "tool_use", name: "Calc", input: { a: 1 } });
  });

  it("closes an unfinished tool call at the end, so a cut-short call still ends its block", () => {
    const chunks = [delta({ tool_calls: [{ index: 0, id: "x", function: { name: "Bash", arguments: '{"command": "ec' } }] }), delta({ content: "tail" })];
    const list = events(translate(chunks, "length"));
    expectWellFormed(list);
    expect(list.filter((e) => e.event === "content_block_start").map((e) => e.data.content_block.type)).toEqual(["tool_use", "text"]);
    expect(list.at(-2)!.data.delta).toEqual({ stop_reason: "max_tokens", stop_sequence: null });
  });

  it("maps stop reasons: length → max_tokens, a matched stop sequence (vLLM stop_reason) → stop_sequence", async () => {
    expect((await sdkRead(translate(textChunks("cut"), "length"))).stop_reason).toBe("max_tokens");
    const stopped = [delta({ content: "1, 2, 3" }), { choices: [{ index: 0, delta: {}, finish_reason: "stop", stop_reason: "END" }] }];
    const message = await sdkRead(translate(stopped, "stop", ctx({ stopSequences: ["END"] })));
    expect(message.stop_reason).toBe("stop_sequence");
    expect(message.stop_sequence).toBe("END");
    // a stop string the client did not ask for (a model's own end marker) is a plain end_turn
    expect((await sdkRead(translate(stopped, "stop", ctx()))).stop_reason).toBe("end_turn");
    expect((await sdkRead(translate(textChunks("filtered"), "content_filter"))).stop_reason).toBe("end_turn");
  });

  it("ends a failed stream with an error event, never message_stop, and the SDK raises the error's type", async () => {
    const t = createStreamTranslator(ctx());
    const text = t.begin() + t.chunk(delta({ content: "partial" })) + t.fail(streamCut("qwen3-coder"));
    expect(t.end("stop", { input: 1, output: 1 })).toBe("");
    const list = events(text);
    expect(list.map((e) => e.event)).toEqual(["message_start", "ping", "content_block_start", "content_block_delta", "error"]);
    expect(list.at(-1)!.data).toEqual({
      type: "error",
      error: { type: "api_error", message: "The model server for qwen3-coder ended the answer before it was complete." },
    });
    const raised = await sdkRead(text).catch((e: unknown) => e);
    expect(raised).toBeInstanceOf(Anthropic.APIError);
    expect((raised as InstanceType<typeof Anthropic.APIError>).type).toBe("api_error");

    const busy = createStreamTranslator(ctx());
    const overloaded = busy.begin() + busy.fail(new GatewayError(503, "channel_busy", "busy"));
    expect(((await sdkRead(overloaded).catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>).type).toBe("overloaded_error");
  });

  it("writes pings as heartbeats that the SDK skips, and nothing once the stream is over", async () => {
    const t = createStreamTranslator(ctx());
    const text = t.begin() + t.heartbeat() + t.chunk(delta({ content: "ok" })) + t.heartbeat() + t.end("stop", { input: 1, output: 1 });
    expect(t.heartbeat()).toBe("");
    expect(events(text).filter((e) => e.event === "ping")).toHaveLength(3);
    expect((await sdkRead(text)).content).toEqual([{ type: "text", text: "ok" }]);
  });

  it("answers an empty upstream answer with no block and end_turn", async () => {
    const text = translate([], "stop");
    expectWellFormed(events(text));
    const message = await sdkRead(text);
    expect(message.content).toEqual([]);
    expect(message.stop_reason).toBe("end_turn");
  });
});
