// The Anthropic whole-answer translation, the error table and count_tokens counting.
import { describe, expect, it } from "vitest";
import { toAnswer, toolInput } from "../src/dialects/anthropic/answer.js";
import { countInputTokens, toCountChat } from "../src/dialects/anthropic/count-tokens.js";
import { anthropicError, errorEvent } from "../src/dialects/anthropic/errors.js";
import { chatToolCallId } from "../src/dialects/anthropic/ids.js";
import { toChat, type MessagesCtx } from "../src/dialects/anthropic/to-chat.js";
import { GatewayError, badRequest } from "../src/http/errors.js";
import { channelBusy, streamCut, upstreamStatus, upstreamTimeout } from "../src/upstream/errors.js";
import { countMessages, countedText } from "../src/tokens/counter.js";
import type { CompletionJson } from "../src/chat/attempt.js";
import { ContextTooLong, applyLimits } from "../src/chat/limits.js";
import type { ModelConfig } from "../src/config/schema.js";

const ctx = (over: Partial<MessagesCtx> = {}): MessagesCtx => ({ model: "claude-sonnet-5", stream: false, stopSequences: [], ...over });
const completion = (message: Record<string, unknown>, finish = "stop", extra: Record<string, unknown> = {}): CompletionJson => ({
  id: "chatcmpl-1",
  model: "qwen3-coder",
  choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish, ...extra }],
});

describe("Anthropic whole answer", () => {
  it("answers text with a msg_ id, the client's model name, end_turn and the usage", () => {
    const answer = toAnswer(completion({ content: "Hi there" }), { input: 12, output: 3 }, ctx());
    expect(answer).toEqual({
      id: expect.stringMatching(/^msg_[A-Za-z0-9]{24}$/),
      type: "message",
      role: "assistant",
      model: "claude-sonnet-5",
      content: [{ type: "text", text: "Hi there" }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it("puts reasoning first as a thinking block, then the text, then each tool call with its id kept", () => {
    const answer = toAnswer(
      completion(
        {
          content: "Checking.",
          reasoning_content: "Need to list files.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "Bash", arguments: '{"command":"ls"}' } },
            { id: "functions.Read:1", type: "function", function: { name: "Read", arguments: '{"file_path":"a"}' } },
          ],
        },
        "tool_calls",
      ),
      { input: 1, output: 1 },
      ctx(),
    );
    expect(answer.content).toEqual([
      { type: "thinking", thinking: "Need to list files.", signature: "" },
      { type: "text", text: "Checking." },
      { type: "tool_use", id: "toolu_call_1", name: "Bash", input: { command: "ls" } },
      { type: "tool_use", id: expect.stringMatching(/^toolu_[A-Za-z0-9_-]+$/), name: "Read", input: { file_path: "a" } },
    ]);
    expect(answer.stop_reason).toBe("tool_use");
    // the id the client sends back in its tool_result reaches the model as the model gave it
    const back = toChat({
      model: "m",
      max_tokens: 5,
      messages: [
        { role: "assistant", content: answer.content },
        { role: "user", content: answer.content.filter((b) => b.type === "tool_use").map((b) => ({ type: "tool_result", tool_use_id: (b as { id: string }).id, content: "ok" })) },
      ],
    }).chat.messages;
    expect((back[0]!.tool_calls as Array<{ id: string }>).map((c) => c.id)).toEqual(["call_1", "functions.Read:1"]);
    expect(back.slice(1).map((m) => m.tool_call_id)).toEqual(["call_1", "functions.Read:1"]);
    expect(chatToolCallId((answer.content[3] as { id: string }).id)).toBe("functions.Read:1");
  });

  it("reads a tool call ended with finish_reason stop as tool_use, and length as max_tokens", () => {
    const call = { tool_calls: [{ id: "c", function: { name: "f", arguments: "{}" } }] };
    expect(toAnswer(completion(call, "stop"), { input: 1, output: 1 }, ctx()).stop_reason).toBe("tool_use");
    expect(toAnswer(completion({ content: "long" }, "length"), { input: 1, output: 1 }, ctx()).stop_reason).toBe("max_tokens");
    expect(toAnswer(completion({ content: "x" }, "content_filter"), { input: 1, output: 1 }, ctx()).stop_reason).toBe("end_turn");
  });

  it("reports the stop sequence vLLM names in stop_reason when the client asked for it", () => {
    const answer = toAnswer(completion({ content: "a, b" }, "stop", { stop_reason: "###" }), { input: 1, output: 1 }, ctx({ stopSequences: ["###"] }));
    expect(answer).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: "###" });
  });

  it("makes tool arguments an object: double-encoded JSON read through, anything else {}", () => {
    expect(toolInput('{"a":1}')).toEqual({ a: 1 });
    expect(toolInput(JSON.stringify('{"a":1}'))).toEqual({ a: 1 });
    expect(toolInput('{"a":')).toEqual({});
    expect(toolInput("[1,2]")).toEqual({});
    expect(toolInput("")).toEqual({});
    expect(toolInput(undefined)).toEqual({});
  });

  it("answers an empty completion with no content block", () => {
    expect(toAnswer(completion({ content: "" }), { input: 1, output: 0 }, ctx()).content).toEqual([]);
    expect(toAnswer({ choices: [] }, { input: 1, output: 0 }, ctx()).content).toEqual([]);
  });
});

describe("Anthropic errors", () => {
  const cases: Array<[GatewayError, number, string]> = [
    [badRequest("invalid_request", "max_tokens is required", "max_tokens"), 400, "invalid_request_error"],
    [new GatewayError(401, "invalid_api_key", "Invalid API key."), 401, "authentication_error"],
    [new GatewayError(403, "app_key_required", "Use an application key."), 403, "permission_error"],
    [new GatewayError(404, "model_not_found", "No such model."), 404, "not_found_error"],
    [new GatewayError(413, "request_too_large", "Too large."), 413, "request_too_large"],
    [new GatewayError(429, "insufficient_quota", "Budget spent.", { type: "insufficient_quota" }), 429, "rate_limit_error"],
    [upstreamStatus("qwen3-coder", 429, undefined, "7"), 429, "rate_limit_error"],
    [new GatewayError(500, "internal_error", "Internal server error", { type: "server_error" }), 500, "api_error"],
    [streamCut("qwen3-coder"), 502, "api_error"],
    [channelBusy("qwen3-coder"), 503, "overloaded_error"],
    [upstreamTimeout("qwen3-coder"), 504, "api_error"],
    [new GatewayError(408, "request_timeout", "Too slow."), 408, "invalid_request_error"],
  ];

  it.each(cases)("%s → its status and Anthropic's type", (err, status, type) => {
    const e = anthropicError(err);
    expect(e.status).toBe(status);
    expect(e.body).toEqual({ type: "error", error: { type, message: err.message } });
  });

  it("keeps Retry-After", () => {
    expect(anthropicError(upstreamStatus("qwen3-coder", 429, undefined, "7")).headers).toEqual({ "Retry-After": "7" });
    expect(anthropicError(channelBusy("m")).headers).toEqual({ "Retry-After": "1" });
  });

  it("tells clients not to retry a wrong key or a spent budget, and only those", () => {
    expect(anthropicError(new GatewayError(401, "invalid_api_key", "Invalid API key.")).headers).toEqual({ "x-should-retry": "false" });
    const spent = new GatewayError(429, "insufficient_quota", "spent", { type: "insufficient_quota" });
    expect(anthropicError(spent).headers).toEqual({ "x-should-retry": "false" });
    const qpm = new GatewayError(429, "rate_limit_exceeded", "slow down", { headers: { "Retry-After": "12" } });
    expect(anthropicError(qpm).headers).toEqual({ "Retry-After": "12" });
    expect(anthropicError(channelBusy("m")).headers).not.toHaveProperty("x-should-retry");
  });

  it("words a prompt over the context as Claude Code parses it: prompt is too long: N tokens > M maximum", () => {
    const claudeCode = /prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)/;
    const model = { model: "qwen", maxContext: 8000 } as ModelConfig;
    const e = anthropicError(new ContextTooLong(model, "take 9100 tokens", 9100));
    expect(e.body).toEqual({ type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 9100 tokens > 7999 maximum" } });
    // a refusal that stopped counting at the maximum still carries numbers Claude Code reads
    const bound = (anthropicError(new ContextTooLong(model, "take more than 7999 tokens")).body as { error: { message: string } }).error.message;
    expect(claudeCode.exec(bound)!.slice(1)).toEqual(["8000", "7999"]);
    // any other 400 keeps its own message
    const other = new GatewayError(400, "context_length_exceeded", "upstream said so");
    expect((anthropicError(other).body as { error: { message: string } }).error.message).toBe("upstream said so");
  });

  it("reads the numbers of the chat limits' own refusal", async () => {
    const model = { model: "qwen", maxContext: 100, maxResponse: 50, maxTemperature: 1, tokenizer: "cl100k_base", vision: false, defaultSystemChatPrompt: "" } as unknown as ModelConfig;
    const { chat } = toChat({ model: "qwen", max_tokens: 10, messages: [{ role: "user", content: "word ".repeat(300) }] });
    const refused = await applyLimits(chat, chat.messages, model, undefined).then(() => undefined, (err: unknown) => err as GatewayError);
    expect(refused?.code).toBe("context_length_exceeded");
    const message = (anthropicError(refused!).body as { error: { message: string } }).error.message;
    expect(message).toMatch(/^prompt is too long: (\d+) tokens > 99 maximum$/);
    expect(Number(/(\d+) tokens/.exec(message)![1])).toBeGreaterThan(99);
  });

  it("writes the same body as an SSE error event", () => {
    expect(errorEvent(channelBusy("m"))).toBe(
      `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "overloaded_error", message: channelBusy("m").message } })}\n\n`,
    );
  });
});

describe("Anthropic count_tokens", () => {
  /** a model whose context no test prompt reaches */
  const wide = (tokenizer: "cl100k_base" | "o200k_base") => ({ tokenizer, maxContext: 1_000_000 });

  it("counts messages as the chat path counts them", async () => {
    const { chat } = toCountChat({ model: "m", system: "Be brief.", messages: [{ role: "user", content: "Hello there" }, { role: "assistant", content: "Hi" }] });
    expect(chat).not.toHaveProperty("max_tokens");
    expect(await countInputTokens(chat, wide("cl100k_base"))).toBe(countMessages(chat.messages, "cl100k_base"));
    expect(await countInputTokens(chat, wide("o200k_base"))).toBe(countMessages(chat.messages, "o200k_base"));
  });

  it("counts the tool definitions as one more system message, and earlier tool calls once, as the chat limits do", async () => {
    const tools = [{ name: "Bash", description: "Runs a command.", input_schema: { type: "object", properties: { command: { type: "string" } } } }];
    const messages = [
      { role: "user", content: "list" },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Bash", input: { command: "ls -la /tmp" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "a b c" }] },
    ];
    const bare = toCountChat({ model: "m", messages }).chat;
    const withTools = toCountChat({ model: "m", messages, tools }).chat;
    // the assistant turn is counted with its call's name and arguments
    expect(countedText(bare.messages[1]!)).toBe('assistant\nBash\n{"command":"ls -la /tmp"}');
    const messagesOnly = countMessages(bare.messages);
    expect(await countInputTokens(bare, wide("cl100k_base"))).toBe(messagesOnly);
    const toolsCount = countMessages([{ role: "system", content: JSON.stringify(withTools.tools) }]);
    expect(await countInputTokens(withTools, wide("cl100k_base"))).toBe(messagesOnly + toolsCount);

    // the same number the chat limits refuse a prompt with
    const model = { model: "m", maxContext: 50, maxResponse: 10, maxTemperature: 1, tokenizer: "cl100k_base", vision: false, defaultSystemChatPrompt: "" } as unknown as ModelConfig;
    const { chat } = toChat({ model: "m", max_tokens: 10, messages, tools: [{ ...tools[0]!, description: "Runs a command. ".repeat(20) }] });
    const refused = await applyLimits(chat, chat.messages, model, undefined, { trim: false }).then(() => undefined, (err: unknown) => err as ContextTooLong);
    expect(refused).toBeInstanceOf(ContextTooLong);
    expect(refused!.promptTokens).toBe(await countInputTokens(chat, model));
  });
});
