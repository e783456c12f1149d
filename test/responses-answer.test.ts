// The whole chat.completion → Response object translation (src/dialects/responses/answer.ts) and what
// `store: true` keeps for a chain of previous_response_id (src/dialects/responses/stored.ts).
import { describe, expect, it } from "vitest";
import { conversationOf, storedResponse, storedRow, toChat, toResponse } from "../src/dialects/responses/index.js";
import type { CompletionJson } from "../src/chat/attempt.js";

const completion = (message: Record<string, unknown>, finish_reason = "stop"): CompletionJson => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason }],
  usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 },
});
const usage = { input: 20, output: 9 };

describe("Responses answer translation", () => {
  it("answers text as a message item, with the model the client asked for and full usage details", () => {
    const { ctx } = toChat({ model: "gpt-5-codex", input: "hi", instructions: "Be brief.", metadata: { run: "7" } });
    const r = toResponse(completion({ content: "Hello." }), usage, ctx);
    expect(r).toMatchObject({
      id: ctx.id,
      object: "response",
      created_at: ctx.createdAt,
      status: "completed",
      error: null,
      incomplete_details: null,
      model: "gpt-5-codex",
      output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Hello.", annotations: [] }] }],
      usage: { input_tokens: 20, input_tokens_details: { cached_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 29 },
      instructions: "Be brief.",
      metadata: { run: "7" },
      store: true,
      parallel_tool_calls: true,
      tool_choice: "auto",
    });
    expect(r.output[0]!.id).toMatch(/^msg_[0-9a-f]{32}$/);
  });

  it("gives reasoning as a reasoning item first and tool calls as function_call items named as the client named them", () => {
    const { ctx } = toChat({
      input: "go",
      tools: [{ type: "namespace", name: "multi_agent_v1", tools: [{ type: "function", name: "spawn_agent" }] }, { type: "function", name: "exec_command" }],
    });
    const r = toResponse(
      completion(
        {
          content: null,
          reasoning_content: "Two things to do.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "exec_command", arguments: '{"cmd":"ls"}' } },
            { type: "function", function: { name: "spawn_agent", arguments: "{}" } },
          ],
        },
        "tool_calls",
      ),
      { input: 20, output: 9, reasoning: 4 },
      ctx,
    );
    expect(r.output).toMatchObject([
      { type: "reasoning", summary: [{ type: "summary_text", text: "Two things to do." }] },
      { type: "function_call", status: "completed", call_id: "call_1", name: "exec_command", arguments: '{"cmd":"ls"}' },
      { type: "function_call", status: "completed", name: "spawn_agent", namespace: "multi_agent_v1", arguments: "{}" },
    ]);
    expect(r.output[0]!.id).toMatch(/^rs_/);
    expect((r.output[2] as { call_id: string }).call_id).toMatch(/^call_[0-9a-f]{32}$/);
    expect(r.output[1]).not.toHaveProperty("namespace");
    expect(r.usage?.output_tokens_details).toEqual({ reasoning_tokens: 4 });
  });

  it("gives a call of a freeform tool as a custom_tool_call with its input", () => {
    const { ctx } = toChat({ input: "patch", tools: [{ type: "custom", name: "apply_patch" }, { type: "custom", name: "note" }] });
    const r = toResponse(
      completion(
        {
          content: null,
          tool_calls: [
            { id: "call_p", type: "function", function: { name: "apply_patch", arguments: JSON.stringify({ input: "*** Begin Patch\n*** End Patch\n" }) } },
            { id: "call_n", type: "function", function: { name: "note", arguments: "plain text, not JSON" } },
          ],
        },
        "tool_calls",
      ),
      usage,
      ctx,
    );
    expect(r.output).toMatchObject([
      { type: "custom_tool_call", call_id: "call_p", name: "apply_patch", input: "*** Begin Patch\n*** End Patch\n", status: "completed" },
      { type: "custom_tool_call", call_id: "call_n", name: "note", input: "plain text, not JSON" },
    ]);
    expect(r.output[0]!.id).toMatch(/^ctc_/);
    // the next turn sends it back as the same tool call
    const row = storedRow(ctx, r, { appId: "a", keyName: null }, { now: 0, retentionDays: 1 })!;
    const next = toChat({ input: [{ type: "custom_tool_call_output", call_id: "call_p", output: "Done." }], tools: [{ type: "custom", name: "apply_patch" }] }, conversationOf(row));
    expect(next.chat.messages[1]).toMatchObject({ role: "assistant", tool_calls: [{ id: "call_p", function: { name: "apply_patch", arguments: JSON.stringify({ input: "*** Begin Patch\n*** End Patch\n" }) } }, { id: "call_n" }] });
  });

  it("marks an answer cut at the length limit incomplete, reason max_output_tokens", () => {
    const { ctx } = toChat({ input: "long story", max_output_tokens: 5 });
    const r = toResponse(completion({ content: "Once upon a" }, "length"), usage, ctx);
    expect(r.status).toBe("incomplete");
    expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(r.output[0]).toMatchObject({ type: "message", status: "incomplete" });
    expect(r.max_output_tokens).toBe(5);
  });
});

describe("stored responses", () => {
  const owner = { appId: "app-1", keyName: "k1" };
  const now = 1_800_000_000_000;

  it("keeps nothing for store: false", () => {
    const { ctx } = toChat({ input: "x", store: false });
    expect(storedRow(ctx, toResponse(completion({ content: "y" }), usage, ctx), owner, { now, retentionDays: 30 })).toBeUndefined();
  });

  it("keeps the conversation so far, so a chain of previous_response_id reads one row per step", () => {
    // turn 1: a tool call
    const t1 = toChat({ input: "what is in /tmp?", instructions: "Use tools.", tools: [{ type: "function", name: "ls" }] });
    const r1 = toResponse(completion({ content: null, tool_calls: [{ id: "call_9", type: "function", function: { name: "ls", arguments: "{}" } }] }, "tool_calls"), usage, t1.ctx);
    const row1 = storedRow(t1.ctx, r1, owner, { now, retentionDays: 30 })!;
    expect(row1).toMatchObject({ id: t1.ctx.id, appId: "app-1", keyName: "k1", createdAt: now, expiresAt: now + 30 * 86_400_000, previousId: null });
    expect(storedResponse(row1)).toEqual(r1);

    // turn 2: the tool's output, continuing from turn 1
    const t2 = toChat({ input: [{ type: "function_call_output", call_id: "call_9", output: "a.txt" }], previous_response_id: row1.id, tools: [{ type: "function", name: "ls" }] }, conversationOf(row1));
    expect(t2.chat.messages).toEqual([
      { role: "user", content: "what is in /tmp?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_9", type: "function", function: { name: "ls", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_9", content: "a.txt" },
    ]);
    const r2 = toResponse(completion({ content: "There is a.txt.", reasoning_content: "Easy." }), usage, t2.ctx);
    const row2 = storedRow(t2.ctx, r2, owner, { now, retentionDays: 30 })!;
    expect(row2.previousId).toBe(row1.id);

    // turn 3: one row holds all of it; reasoning is not sent back
    const t3 = toChat({ input: "thanks", previous_response_id: row2.id }, conversationOf(row2));
    expect(t3.chat.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "what is in /tmp?"],
      ["assistant", null],
      ["tool", "a.txt"],
      ["assistant", "There is a.txt."],
      ["user", "thanks"],
    ]);
  });

  it("names a namespaced call back the same way in the next turn", () => {
    const tools = [{ type: "namespace", name: "ns", tools: [{ type: "function", name: "go" }] }, { type: "function", name: "go" }];
    const t1 = toChat({ input: "x", tools });
    const r1 = toResponse(completion({ content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "ns__go", arguments: "{}" } }] }, "tool_calls"), usage, t1.ctx);
    expect(r1.output[0]).toMatchObject({ name: "go", namespace: "ns" });
    const row = storedRow(t1.ctx, r1, { appId: "a", keyName: null }, { now, retentionDays: 1 })!;
    const t2 = toChat({ input: [{ type: "function_call_output", call_id: "c1", output: "ok" }], tools }, conversationOf(row));
    expect((t2.chat.messages[1]!.tool_calls as Array<{ function: { name: string } }>)[0]!.function.name).toBe("ns__go");
  });
});
