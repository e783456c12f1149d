// The Anthropic request translation: a Messages body → the chat request the chat path meters and
// sends upstream, and the 400s for bad input. The Claude Code body below has the fields and block
// shapes Claude Code 2.1.197 sends (recorded by test/claude-code.test.ts), with short texts.
import { describe, expect, it } from "vitest";
import { readAnthropicKey } from "../src/dialects/anthropic/dialect.js";
import { chatToolCallId, toolUseId } from "../src/dialects/anthropic/ids.js";
import { toChat } from "../src/dialects/anthropic/to-chat.js";
import { GatewayError } from "../src/http/errors.js";
import { parseChatRequest } from "../src/chat/request-schema.js";

const bashSchema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: { command: { type: "string", description: "The command to execute" }, timeout: { type: "number" } },
  required: ["command"],
  additionalProperties: false,
};

/** What Claude Code sends on its second request of a tool loop (shapes as recorded). */
function claudeCodeBody() {
  return {
    model: "claude-opus-4-8",
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "<system-reminder>\nToday's date is 2026-11-25.\n</system-reminder>\n\n" },
          { type: "text", text: "Run the marker command.", cache_control: { type: "ephemeral" } },
        ],
      },
      { role: "system", content: "Available agent types for the Agent tool: …" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "The user wants the marker.", signature: "" },
          { type: "text", text: "Running it." },
          { type: "tool_use", id: "toolu_call_7", name: "Bash", input: { command: "echo sluice-1-marker", description: "Print the marker" } },
        ],
      },
      {
        role: "user",
        content: [{ tool_use_id: "toolu_call_7", type: "tool_result", content: "sluice-1-marker", is_error: false, cache_control: { type: "ephemeral" } }],
      },
    ],
    system: [
      { type: "text", text: "x-anthropic-billing-header: cc_version=2.1.197.132; cc_entrypoint=sdk-cli;" },
      { type: "text", text: "You are a Claude agent, built on Anthropic's Claude Agent SDK.", cache_control: { type: "ephemeral" } },
      { type: "text", text: "You are an interactive agent that helps users with software engineering tasks.", cache_control: { type: "ephemeral" } },
    ],
    tools: [
      { name: "Bash", description: "Executes a bash command and returns its output.", input_schema: bashSchema },
      { name: "TaskList", description: "Lists tasks.", input_schema: { type: "object", properties: {} } },
    ],
    metadata: { user_id: JSON.stringify({ device_id: "abc", account_uuid: "", session_id: "s-1" }) },
    max_tokens: 32000,
    thinking: { type: "adaptive" },
    context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
    output_config: { effort: "high" },
    stream: true,
  };
}

function badRequest(body: unknown): GatewayError {
  try {
    toChat(body);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    return err as GatewayError;
  }
  throw new Error("expected a 400");
}

describe("Anthropic request translation", () => {
  it("accepts Claude Code's body and makes a chat request the chat schema accepts", () => {
    const { chat, ctx } = toChat(claudeCodeBody());
    expect(() => parseChatRequest(chat)).not.toThrow();
    expect(ctx).toEqual({ model: "claude-opus-4-8", stream: true, stopSequences: [] });
    expect(chat.model).toBe("claude-opus-4-8");
    expect(chat.max_tokens).toBe(32000);
    expect(chat.stream).toBe(true);
    // thinking, context_management, output_config and metadata are not forwarded
    for (const field of ["thinking", "context_management", "output_config", "metadata", "system"]) expect(chat).not.toHaveProperty(field);
    expect(chat.messages).toEqual([
      {
        role: "system",
        content: "You are a Claude agent, built on Anthropic's Claude Agent SDK.\nYou are an interactive agent that helps users with software engineering tasks.",
      },
      { role: "user", content: "<system-reminder>\nToday's date is 2026-11-25.\n</system-reminder>\n\n\nRun the marker command." },
      { role: "system", content: "Available agent types for the Agent tool: …" },
      {
        role: "assistant",
        content: "Running it.",
        tool_calls: [{ id: "call_7", type: "function", function: { name: "Bash", arguments: '{"command":"echo sluice-1-marker","description":"Print the marker"}' } }],
      },
      { role: "tool", tool_call_id: "call_7", content: "sluice-1-marker" },
    ]);
    expect(chat.tools).toEqual([
      { type: "function", function: { name: "Bash", description: "Executes a bash command and returns its output.", parameters: bashSchema } },
      { type: "function", function: { name: "TaskList", description: "Lists tasks.", parameters: { type: "object", properties: {} } } },
    ]);
  });

  it("takes a plain string system and string contents as they are", () => {
    const { chat } = toChat({ model: "m", max_tokens: 10, system: "Be brief.", messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }, { role: "user", content: "Bye" }] });
    expect(chat.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello" },
      { role: "user", content: "Bye" },
    ]);
    expect(chat.stream).toBe(false);
  });

  it("turns images (base64 and url) into image_url parts", () => {
    const { chat } = toChat({
      model: "m",
      max_tokens: 10,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
            { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
          ],
        },
      ],
    });
    expect(chat.messages[0]!.content).toEqual([
      { type: "text", text: "What is this?" },
      { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
      { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
    ]);
  });

  it("makes tool results tool messages: blocks joined, is_error kept in the text, images moved to a user message after them", () => {
    const { chat } = toChat({
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "user", content: "read both" },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "toolu_a", name: "Read", input: { file_path: "a.png" } },
            { type: "tool_use", id: "toolu_b", name: "Bash", input: { command: "false" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_a", content: [{ type: "text", text: "an image:" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }] },
            { type: "tool_result", tool_use_id: "toolu_b", content: "exit code 1", is_error: true },
            { type: "text", text: "now explain" },
          ],
        },
      ],
    });
    expect(chat.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "a", type: "function", function: { name: "Read", arguments: '{"file_path":"a.png"}' } },
          { id: "b", type: "function", function: { name: "Bash", arguments: '{"command":"false"}' } },
        ],
      },
      { role: "tool", tool_call_id: "a", content: "an image:" },
      { role: "tool", tool_call_id: "b", content: "Error: exit code 1" },
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
          { type: "text", text: "now explain" },
        ],
      },
    ]);
  });

  it("does not mark an error twice when the tool result already says so", () => {
    const { chat } = toChat({
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "assistant", content: [{ type: "tool_use", id: "x", name: "Bash", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "x", is_error: true, content: "<tool_use_error>InputValidationError: …</tool_use_error>" }] },
      ],
    });
    expect(chat.messages[1]).toEqual({ role: "tool", tool_call_id: "x", content: "<tool_use_error>InputValidationError: …</tool_use_error>" });
  });

  it("drops thinking, redacted thinking and server tool blocks, and blocks of types it does not know", () => {
    const { chat } = toChat({
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "user", content: [{ type: "text", text: "search" }, { type: "some_future_block", data: 1 }] },
        {
          role: "assistant",
          content: [
            { type: "redacted_thinking", data: "opaque" },
            { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "q" } },
            { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] },
            { type: "text", text: "Found it." },
          ],
        },
      ],
    });
    expect(chat.messages).toEqual([
      { role: "user", content: "search" },
      { role: "assistant", content: "Found it." },
    ]);
  });

  it("reads plain-text documents and says when a document (a PDF) was left out", () => {
    const { chat } = toChat({
      model: "m",
      max_tokens: 10,
      messages: [
        {
          role: "user",
          content: [
            { type: "document", title: "notes", source: { type: "text", media_type: "text/plain", data: "line one" } },
            { type: "document", title: "paper.pdf", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" } },
          ],
        },
      ],
    });
    expect(chat.messages[0]!.content).toBe('notes\nline one\n[document "paper.pdf" left out: this model reads text only]');
  });

  it("offers the client's tools as functions and leaves out Anthropic's server tools", () => {
    const { chat } = toChat({
      model: "m",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
      tools: [
        { type: "web_search_20250305", name: "web_search", max_uses: 5 },
        { type: "code_execution_20250825", name: "code_execution" },
        { type: "custom", name: "lookup", input_schema: { type: "object" }, strict: true, cache_control: { type: "ephemeral" } },
      ],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
    });
    expect(chat.tools).toEqual([{ type: "function", function: { name: "lookup", parameters: { type: "object" }, strict: true } }]);
    expect(chat.tool_choice).toBe("required");
    expect(chat.parallel_tool_calls).toBe(false);
  });

  it("maps tool_choice auto / tool / none, and sends no tool_choice when no tool is left", () => {
    const base = { model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }], tools: [{ name: "f", input_schema: { type: "object" } }] };
    expect(toChat({ ...base, tool_choice: { type: "auto" } }).chat.tool_choice).toBe("auto");
    expect(toChat({ ...base, tool_choice: { type: "none" } }).chat.tool_choice).toBe("none");
    expect(toChat({ ...base, tool_choice: { type: "tool", name: "f" } }).chat.tool_choice).toEqual({ type: "function", function: { name: "f" } });
    const serverOnly = toChat({ ...base, tools: [{ type: "web_search_20250305", name: "web_search" }], tool_choice: { type: "any" } }).chat;
    expect(serverOnly).not.toHaveProperty("tools");
    expect(serverOnly).not.toHaveProperty("tool_choice");
  });

  it("passes stop_sequences as stop, and temperature, top_p and top_k (a passThrough field of chat) as they are", () => {
    const { chat, ctx } = toChat({
      model: "m",
      max_tokens: 10,
      messages: [{ role: "user", content: "count" }],
      stop_sequences: ["END", "\n\n"],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      service_tier: "auto",
      container: "c-1",
      mcp_servers: [],
    });
    expect(chat).toMatchObject({ stop: ["END", "\n\n"], temperature: 0.2, top_p: 0.9, top_k: 40 });
    for (const field of ["service_tier", "container", "mcp_servers", "stop_sequences"]) expect(chat).not.toHaveProperty(field);
    expect(ctx).toEqual({ model: "m", stream: false, stopSequences: ["END", "\n\n"] });
  });

  it("refuses a body without max_tokens, or with a wrong field, naming the field", () => {
    const missing = badRequest({ model: "m", messages: [{ role: "user", content: "hi" }] });
    expect(missing.message).toBe("max_tokens is required");
    expect(missing.param).toBe("max_tokens");
    expect(badRequest({ model: "m", max_tokens: 0, messages: [{ role: "user", content: "hi" }] }).param).toBe("max_tokens");
    expect(badRequest({ model: "m", max_tokens: 5, messages: [] }).message).toBe("messages: must hold at least one item");
    expect(badRequest({ model: "m", max_tokens: 5, messages: [{ role: "tool", content: "x" }] }).param).toBe("messages[0].role");
    const text = badRequest({ model: "m", max_tokens: 5, messages: [{ role: "user", content: [{ type: "text" }] }] });
    expect(text.message).toBe("messages[0].content[0].text is required");
    const toolUse = badRequest({ model: "m", max_tokens: 5, messages: [{ role: "assistant", content: [{ type: "tool_use", name: "f", input: {} }] }] });
    expect(toolUse.param).toBe("messages[0].content[0].id");
    const inResult = badRequest({
      model: "m",
      max_tokens: 5,
      messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: 5 }] }] }],
    });
    expect(inResult.message).toBe("messages[0].content[0].content[0].text: expected a string, got a number");
    const tool = badRequest({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }], tools: [{ name: "f" }] });
    expect(tool.message).toBe("tools[0].input_schema is required");
    expect(badRequest({ model: "m", max_tokens: 5, messages: [{ role: "user", content: [{ text: "no type" }] }] }).message).toBe("messages[0].content[0].type is required");
  });

  it("refuses an image from the Files API, which no chat model can fetch", () => {
    const err = badRequest({ model: "m", max_tokens: 5, messages: [{ role: "user", content: [{ type: "image", source: { type: "file", file_id: "file_1" } }] }] });
    expect(err.param).toBe("messages[0].content[0].source");
  });
});

describe("Anthropic tool ids", () => {
  it("keep the upstream's id inside a toolu_ id, one to one, whatever its characters", () => {
    for (const id of ["call_a1", "chatcmpl-tool-9f", "functions.Bash:0", "enc_x", "toolu_x", "é"]) {
      const client = toolUseId(id);
      expect(client).toMatch(/^toolu_[A-Za-z0-9_-]+$/);
      expect(chatToolCallId(client)).toBe(id);
    }
    expect(toolUseId("call_a1")).toBe("toolu_call_a1");
    expect(toolUseId(undefined)).toMatch(/^toolu_[A-Za-z0-9]{24}$/);
  });

  it("reach the model as they are when Sluice did not make them", () => {
    expect(chatToolCallId("abc")).toBe("abc");
    expect(chatToolCallId("toolu_01A09q90qw90lq917835lq9")).toBe("01A09q90qw90lq917835lq9");
  });
});

describe("Anthropic keys", () => {
  it("come from x-api-key, else from Authorization: Bearer", () => {
    expect(readAnthropicKey(new Headers({ "x-api-key": "k1", authorization: "Bearer k2" }))).toBe("k1");
    expect(readAnthropicKey(new Headers({ authorization: "Bearer k2" }))).toBe("k2");
    expect(readAnthropicKey(new Headers({ authorization: "Basic k2" }))).toBeUndefined();
    expect(readAnthropicKey(new Headers({ "x-api-key": " " }))).toBeUndefined();
    expect(readAnthropicKey(new Headers())).toBeUndefined();
  });
});
