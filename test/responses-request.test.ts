// The Responses request → chat request translation (src/dialects/responses/to-chat.ts), against the
// bodies the real clients send (docs/codex.md#what-codex-sends, docs/codex.md#what-sluice-reads).
import { describe, expect, it } from "vitest";
import { parseChatRequest } from "../src/chat/request-schema.js";
import { GatewayError } from "../src/http/errors.js";
import { toChat } from "../src/dialects/responses/index.js";
import type { InputItem } from "../src/dialects/responses/index.js";

/** The shape of a Codex 0.169 first request (trimmed): no instructions, developer items, a namespace tool, web_search. */
const codexBody = {
  model: "made-up-model",
  stream: true,
  input: [
    { type: "message", id: "msg_1", role: "developer", content: [{ type: "input_text", text: "You are a coding agent." }] },
    { type: "message", id: "msg_2", role: "developer", content: [{ type: "input_text", text: "<skills>" }, { type: "input_text", text: "<permissions>" }] },
    { type: "message", id: "msg_3", role: "user", content: [{ type: "input_text", text: "<environment_context/>" }] },
    { type: "message", id: "msg_4", role: "user", content: [{ type: "input_text", text: "say hello" }] },
  ],
  tools: [
    { type: "function", name: "exec_command", description: "Runs a command", strict: false, parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] } },
    {
      type: "namespace",
      name: "multi_agent_v1",
      description: "Sub-agents",
      tools: [{ type: "function", name: "wait_agent", strict: false, parameters: { type: "object", properties: {} } }],
    },
    { type: "web_search", external_web_access: true },
  ],
  tool_choice: "auto",
  parallel_tool_calls: true,
  reasoning: { summary: "auto" },
  store: false,
  include: ["reasoning.encrypted_content"],
  prompt_cache_key: "01a21417-ef22-7aa3-b517-6abf350bd28e",
  client_metadata: { "x-codex-turn-metadata": "{}", session_id: "s" },
};

function badRequestOf(body: unknown): GatewayError {
  try {
    toChat(body);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error("expected a 400");
}

describe("Responses request → chat request", () => {
  it("takes a string input as one user message, instructions as the system message first", () => {
    const { chat, ctx } = toChat({ model: "m1", instructions: "Be brief.", input: "hi" });
    expect(chat.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
    ]);
    expect(chat.model).toBe("m1");
    expect(ctx.model).toBe("m1");
    expect(ctx.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(ctx.store).toBe(true);
  });

  it("accepts what Codex sends: developer items merged into the first system message, built-ins not offered", () => {
    const { chat, ctx } = toChat(codexBody);
    expect(chat.messages).toEqual([
      { role: "system", content: "You are a coding agent.\n\n<skills>\n<permissions>" },
      { role: "user", content: "<environment_context/>" },
      { role: "user", content: "say hello" },
    ]);
    expect((chat.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(["exec_command", "wait_agent"]);
    expect(chat.tool_choice).toBe("auto");
    expect(chat.parallel_tool_calls).toBe(true);
    expect(chat.stream_options).toEqual({ include_usage: true });
    // fields with no meaning here are not forwarded
    for (const field of ["include", "prompt_cache_key", "client_metadata", "store", "reasoning", "input", "instructions"]) expect(chat).not.toHaveProperty(field);
    expect(chat).not.toHaveProperty("reasoning_effort");
    expect(ctx.store).toBe(false);
    expect(ctx.conversation).toEqual([]);
    expect(ctx.tools.toClient.get("wait_agent")).toEqual({ name: "wait_agent", namespace: "multi_agent_v1" });
    // the pipeline validates it as any chat request
    expect(() => parseChatRequest(chat)).not.toThrow();
  });

  it("turns function calls into the assistant's tool_calls and outputs into tool messages, parallel calls in one message", () => {
    const input: InputItem[] = [
      { type: "message", role: "user", content: "list and count" },
      { type: "reasoning", id: "rs_1", summary: [] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Running both." }] },
      { type: "function_call", call_id: "call_a", name: "exec_command", arguments: '{"cmd":"ls"}' },
      { type: "function_call", call_id: "call_b", name: "exec_command", arguments: '{"cmd":"wc"}' },
      { type: "function_call_output", call_id: "call_a", output: "a.txt" },
      { type: "function_call_output", call_id: "call_b", output: [{ type: "input_text", text: "1" }, { type: "input_text", text: "2" }] },
      { type: "function_call", call_id: "call_c", name: "wait_agent", namespace: "multi_agent_v1", arguments: "{}" },
      { type: "function_call_output", call_id: "call_c", output: "done" },
      { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "x" } },
    ];
    const { chat } = toChat({ ...codexBody, input });
    expect(chat.messages).toEqual([
      { role: "user", content: "list and count" },
      {
        role: "assistant",
        content: "Running both.",
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "exec_command", arguments: '{"cmd":"ls"}' } },
          { id: "call_b", type: "function", function: { name: "exec_command", arguments: '{"cmd":"wc"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "a.txt" },
      { role: "tool", tool_call_id: "call_b", content: "1\n2" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_c", type: "function", function: { name: "wait_agent", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_c", content: "done" },
    ]);
    expect(() => parseChatRequest(chat)).not.toThrow();
  });

  it("offers a namespaced function under its namespace when a top-level function has its name", () => {
    const tools = [
      { type: "namespace", name: "ns", tools: [{ type: "function", name: "run" }] },
      { type: "function", name: "run" },
    ];
    const { chat, ctx } = toChat({
      input: [{ type: "function_call", call_id: "c1", name: "run", namespace: "ns", arguments: "{}" }, { type: "function_call_output", call_id: "c1", output: "ok" }],
      tools,
    });
    expect((chat.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(["run", "ns__run"]);
    expect(ctx.tools.toClient.get("ns__run")).toEqual({ name: "run", namespace: "ns" });
    expect((chat.messages[0]!.tool_calls as Array<{ function: { name: string } }>)[0]!.function.name).toBe("ns__run");
  });

  it("never refuses a built-in tool: with only built-ins, no tools and no tool_choice go upstream", () => {
    const { chat } = toChat({
      input: "search",
      tools: [{ type: "web_search" }, { type: "file_search", vector_store_ids: ["v"] }, { type: "code_interpreter", container: { type: "auto" } }, { type: "computer_use_preview" }, { type: "image_generation" }, { type: "mcp", server_label: "x" }, { type: "local_shell" }, { type: "tool_search", execution: "client" }],
      tool_choice: { type: "web_search" },
      parallel_tool_calls: false,
    });
    expect(chat).not.toHaveProperty("tools");
    expect(chat).not.toHaveProperty("tool_choice");
    expect(chat).not.toHaveProperty("parallel_tool_calls");
  });

  it("offers a freeform (custom) tool as a function of one string, its grammar in the description", () => {
    const grammar = 'start: "*** Begin Patch" LF';
    const { chat } = toChat({
      input: [
        { role: "user", content: "patch it" },
        { type: "custom_tool_call", call_id: "c1", name: "apply_patch", input: "*** Begin Patch\n" },
        { type: "custom_tool_call_output", call_id: "c1", output: "Success." },
      ],
      tools: [{ type: "custom", name: "apply_patch", description: "Edits files. FREEFORM.", format: { type: "grammar", syntax: "lark", definition: grammar } }],
    });
    const [offered] = chat.tools as Array<{ function: { name: string; description: string; parameters: unknown } }>;
    expect(offered!.function.name).toBe("apply_patch");
    expect(offered!.function.description).toContain("Edits files. FREEFORM.");
    expect(offered!.function.description).toContain(grammar);
    expect(offered!.function.parameters).toMatchObject({ type: "object", properties: { input: { type: "string" } }, required: ["input"] });
    expect(chat.messages.slice(1)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "apply_patch", arguments: '{"input":"*** Begin Patch\\n"}' } }] },
      { role: "tool", tool_call_id: "c1", content: "Success." },
    ]);
  });

  it("maps tool_choice: a function by name, allowed_tools narrowing the offer, a built-in to auto", () => {
    const tools = [
      { type: "function", name: "a" },
      { type: "function", name: "b" },
      { type: "namespace", name: "ns", tools: [{ type: "function", name: "c" }] },
    ];
    expect(toChat({ input: "x", tools, tool_choice: { type: "function", name: "c", namespace: "ns" } }).chat.tool_choice).toEqual({ type: "function", function: { name: "c" } });
    const allowed = toChat({ input: "x", tools, tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "b" }] } }).chat;
    expect(allowed.tool_choice).toBe("required");
    expect((allowed.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(["b"]);
    expect(toChat({ input: "x", tools, tool_choice: { type: "image_generation" } }).chat.tool_choice).toBe("auto");
    expect(toChat({ input: "x", tools, tool_choice: "required" }).chat.tool_choice).toBe("required");
    const err = badRequestOf({ input: "x", tools, tool_choice: { type: "function", name: "nope" } });
    expect(err.toBody().error).toMatchObject({ param: "tool_choice.name", code: "invalid_request" });
  });

  it("maps the sampling and format fields", () => {
    const schema = { type: "object", properties: { n: { type: "number" } } };
    const { chat } = toChat({
      input: "x",
      max_output_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      text: { format: { type: "json_schema", name: "out", schema, strict: true }, verbosity: "low" },
      reasoning: { effort: "high", summary: "auto" },
      user: "u-1",
      metadata: { a: "b" },
    });
    expect(chat).toMatchObject({ max_tokens: 64, temperature: 0.2, top_p: 0.9, reasoning_effort: "high", user: "u-1", stream: false });
    expect(chat.response_format).toEqual({ type: "json_schema", json_schema: { name: "out", schema, strict: true } });
    expect(chat).not.toHaveProperty("metadata");
    expect(chat).not.toHaveProperty("stream_options");
    expect(toChat({ input: "x", text: { format: { type: "json_object" } } }).chat.response_format).toEqual({ type: "json_object" });
    expect(toChat({ input: "x", text: { format: { type: "text" } } }).chat).not.toHaveProperty("response_format");
    expect(toChat({ input: "x", reasoning: { effort: "none" } }).chat).not.toHaveProperty("reasoning_effort");
  });

  it("keeps images and files as chat parts; a mid-conversation developer item stays a system message in place", () => {
    const { chat } = toChat({
      input: [
        { role: "user", content: [{ type: "input_text", text: "what is this" }, { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "low" }, { type: "input_file", file_url: "https://files.example/a.pdf", filename: "a.pdf" }] },
        { role: "assistant", content: "A picture." },
        { role: "developer", content: "Now answer in French." },
        { role: "user", content: "merci" },
      ],
    });
    expect(chat.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "what is this" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "low" } },
          { type: "text", text: "[file: a.pdf](https://files.example/a.pdf)" },
        ],
      },
      { role: "assistant", content: "A picture." },
      { role: "system", content: "Now answer in French." },
      { role: "user", content: "merci" },
    ]);
    expect(() => parseChatRequest(chat)).not.toThrow();
  });

  it("puts the previous conversation after the instructions and before this input", () => {
    const previous: InputItem[] = [
      { type: "message", role: "user", content: "my name is Ada" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Hello Ada." }] },
    ];
    const { chat, ctx } = toChat({ input: "what is my name?", instructions: "Be kind.", previous_response_id: "resp_prev" }, previous);
    expect(chat.messages).toEqual([
      { role: "system", content: "Be kind." },
      { role: "user", content: "my name is Ada" },
      { role: "assistant", content: "Hello Ada." },
      { role: "user", content: "what is my name?" },
    ]);
    expect(ctx.previousId).toBe("resp_prev");
    expect(ctx.conversation).toEqual([...previous, { type: "message", role: "user", content: "what is my name?" }]);
  });

  it("answers bad input with a 400 that names the field", () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [{ model: "m" }, "input", /input is required/],
      [{ input: 5 }, "input", /expected a string or an array/],
      [{ input: [{ type: "function_call", name: "f", arguments: "{}" }] }, "input[0].call_id", /is required/],
      [{ input: [{ role: "robot", content: "x" }] }, "input[0].role", /must be one of/],
      [{ input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1" }] }] }, "input[0].content[0].image_url", /uploaded files are not supported/],
      [{ input: [{ type: "item_reference", id: "msg_1" }] }, "input[0]", /item references are not supported/],
      [{ input: [] }, "input", /at least one message/],
      [{ input: "x", max_output_tokens: 1.5 }, "max_output_tokens", /expected an integer, got 1.5/],
      [{ input: "x", tools: [{ type: "function" }] }, "tools[0].name", /is required/],
      [{ input: "x", tools: [{ type: "namespace", name: "ns" }] }, "tools[0].tools", /is required/],
      [{ input: "x", background: true }, "background", /not supported/],
      [{ input: "x", text: { format: { type: "json_schema", schema: {} } } }, "text.format.name", /is required/],
    ];
    for (const [body, param, message] of cases) {
      const err = badRequestOf(body);
      expect(err.status, JSON.stringify(body)).toBe(400);
      expect(err.param, JSON.stringify(body)).toBe(param);
      expect(err.message, JSON.stringify(body)).toMatch(message);
    }
  });
});
