// The chat chunk stream → Responses event stream translation (src/dialects/responses/stream.ts), read
// back with the openai SDK's own SSE parser and accumulator (test/support/responses-sdk.ts).
import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/http/errors.js";
import { createResponsesStream, toChat } from "../src/dialects/responses/index.js";
import type { ChatChunk } from "../src/dialects/responses/types.js";
import { parseSse } from "./support/sse.js";
import { readWithSdk, readWithSdkSettled } from "./support/responses-sdk.js";

const ctxOf = (body: Record<string, unknown> = {}) => toChat({ model: "gpt-5-alias", input: "hi", stream: true, ...body }).ctx;
const text = (content: string): ChatChunk => ({ choices: [{ index: 0, delta: { content } }] });
const thinking = (reasoning_content: string): ChatChunk => ({ choices: [{ index: 0, delta: { reasoning_content } }] });
const call = (index: number, fields: { id?: string; name?: string; arguments?: string }): ChatChunk => ({
  choices: [{ index: 0, delta: { tool_calls: [{ index, ...(fields.id ? { id: fields.id, type: "function" as const } : {}), function: { name: fields.name, arguments: fields.arguments } }] } }],
});

function run(chunks: ChatChunk[], finish = "stop", ctx = ctxOf()) {
  const t = createResponsesStream(ctx);
  let sse = t.begin();
  for (const c of chunks) sse += t.chunk(c);
  sse += t.end(finish, { input: 12, output: 7, reasoning: 3 });
  return { sse, translator: t, ctx };
}

const types = (sse: string) => parseSse(sse).map((f) => f.event);

describe("Responses stream translation", () => {
  it("streams text as the full event sequence, numbered, that the openai SDK accumulates", async () => {
    const { sse, translator, ctx } = run([{ choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }, text("Hello"), text(", world")]);
    expect(types(sse)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const frames = parseSse(sse).map((f) => JSON.parse(f.data));
    expect(frames.map((f) => f.sequence_number)).toEqual(frames.map((_, i) => i));
    frames.forEach((f, i) => expect(f.type).toBe(parseSse(sse)[i]!.event));

    const { final } = await readWithSdk(sse);
    expect(final.id).toBe(ctx.id);
    expect(final.model).toBe("gpt-5-alias");
    expect(final.status).toBe("completed");
    expect(final.output_text).toBe("Hello, world");
    expect(final.usage).toEqual({
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 3 },
      total_tokens: 19,
    });
    expect(translator.result()).toEqual(frames.at(-1).response);
  });

  it("gives upstream reasoning as a reasoning item with a summary, before the message", async () => {
    const { sse } = run([thinking("Let me "), thinking("think."), text("42")]);
    expect(types(sse).slice(2, 9)).toEqual([
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
    ]);
    const { final } = await readWithSdk(sse);
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect(final.output[0]).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: "Let me think." }] });
    expect(final.output_text).toBe("42");
  });

  it("streams tool calls with their argument deltas, named as the client named them, even interleaved", async () => {
    const ctx = ctxOf({
      tools: [
        { type: "function", name: "exec_command", parameters: { type: "object" } },
        { type: "namespace", name: "multi_agent_v1", tools: [{ type: "function", name: "wait_agent" }] },
      ],
    });
    const { sse } = run(
      [
        text("Running."),
        call(0, { id: "call_A", name: "exec_command", arguments: "" }),
        call(0, { arguments: '{"cmd":' }),
        call(1, { id: "call_B", arguments: '{"targets"' }), // the name comes after the first arguments
        call(1, { name: "wait_agent", arguments: ":[]}" }),
        call(0, { arguments: '"echo hi"}' }),
      ],
      "tool_calls",
      ctx,
    );
    const events = parseSse(sse).map((f) => JSON.parse(f.data));
    const argDeltas = events.filter((e) => e.type === "response.function_call_arguments.delta");
    expect(argDeltas.map((e) => [e.output_index, e.delta])).toEqual([
      [1, '{"cmd":'],
      [2, '{"targets":[]}'],
      [1, '"echo hi"}'],
    ]);
    const { final } = await readWithSdk(sse);
    expect(final.status).toBe("completed");
    expect(final.output).toMatchObject([
      { type: "message", content: [{ type: "output_text", text: "Running." }] },
      { type: "function_call", call_id: "call_A", name: "exec_command", arguments: '{"cmd":"echo hi"}', status: "completed" },
      { type: "function_call", call_id: "call_B", name: "wait_agent", namespace: "multi_agent_v1", arguments: '{"targets":[]}', status: "completed" },
    ]);
    expect(final.output[1]!.id).toMatch(/^fc_/);
    // Codex reads each call from its output_item.done: complete there
    const done = events.filter((e) => e.type === "response.output_item.done").map((e) => e.item);
    expect(done[2]).toMatchObject({ name: "wait_agent", namespace: "multi_agent_v1", arguments: '{"targets":[]}' });
  });

  it("sends a freeform tool's input whole when its call closes", async () => {
    const ctx = ctxOf({ tools: [{ type: "custom", name: "apply_patch", format: { type: "grammar", syntax: "lark", definition: "start: x" } }] });
    const input = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n";
    const args = JSON.stringify({ input });
    const { sse } = run([call(0, { id: "call_P", name: "apply_patch", arguments: args.slice(0, 10) }), call(0, { arguments: args.slice(10) })], "tool_calls", ctx);
    expect(types(sse).slice(2)).toEqual([
      "response.output_item.added",
      "response.custom_tool_call_input.delta",
      "response.custom_tool_call_input.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const { final } = await readWithSdk(sse);
    expect(final.output).toMatchObject([{ type: "custom_tool_call", call_id: "call_P", name: "apply_patch", input, status: "completed" }]);
  });

  it("ends with response.incomplete (max_output_tokens) when the upstream stopped at its length", async () => {
    const { sse } = run([text("cut sh")], "length");
    expect(types(sse).at(-1)).toBe("response.incomplete");
    expect(types(sse)).not.toContain("response.completed");
    const { final } = await readWithSdk(sse);
    expect(final.status).toBe("incomplete");
    expect(final.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(final.output[0]).toMatchObject({ type: "message", status: "incomplete" });
  });

  it("answers a failure after the first byte with response.failed and error, never response.completed", async () => {
    const t = createResponsesStream(ctxOf());
    const sse = t.begin() + t.chunk(text("partial ans")) + t.fail(new GatewayError(502, "upstream_error", "The model's answer was cut off."));
    expect(types(sse).slice(-2)).toEqual(["response.failed", "error"]);
    expect(types(sse)).not.toContain("response.completed");
    const frames = parseSse(sse).map((f) => JSON.parse(f.data));
    expect(frames.at(-1)).toEqual({ type: "error", sequence_number: frames.length - 1, code: "upstream_error", message: "The model's answer was cut off.", param: null });

    // the SDK's stream helper sees the failed response, then rejects with the error's message
    const { events, error } = await readWithSdkSettled(sse);
    expect(events.map((e) => e.type).slice(-2)).toEqual(["response.failed", "error"]);
    expect(error?.message).toBe("The model's answer was cut off.");
    const failed = events.find((e) => e.type === "response.failed")!;
    expect(failed.type === "response.failed" && failed.response).toMatchObject({
      status: "failed",
      error: { code: "upstream_error", message: "The model's answer was cut off." },
      output: [{ type: "message", status: "incomplete", content: [{ text: "partial ans" }] }],
    });
    expect(t.result()?.status).toBe("failed");
  });

  it("completes an answer with no text and no calls with an empty output", async () => {
    const { sse } = run([{ choices: [{ index: 0, delta: { role: "assistant" } }] }]);
    expect(types(sse)).toEqual(["response.created", "response.in_progress", "response.completed"]);
    const { final } = await readWithSdk(sse);
    expect(final.output).toEqual([]);
    expect(final.output_text).toBe("");
  });
});
