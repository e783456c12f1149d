// The real Claude Code CLI against the Anthropic dialect's translations (the dialect test server
// stands in for the pipeline; the "model" is a script answering Chat Completions chunks): what it
// sends, a plain answer, a whole tool loop through its Bash tool, its retry of an overloaded server,
// its fallback to a whole answer after a failed stream, and its reading of "prompt is too long".
import { afterEach, describe, expect, it } from "vitest";
import { GatewayError } from "../src/http/errors.js";
import { channelBusy, streamCut } from "../src/upstream/errors.js";
import { runClaude } from "./support/claude-code.js";
import { startDialectServer, textChunks, toolCallChunks, type DialectServer, type ModelScript } from "./support/anthropic-dialect-server.js";

const CLI_TIMEOUT = 150_000;
let server: DialectServer | undefined;
afterEach(() => server?.close());

async function serve(script: ModelScript): Promise<DialectServer> {
  server = await startDialectServer(script);
  return server;
}

const messagesCalls = (s: DialectServer) => s.requests.filter((r) => r.path === "/v1/messages");

describe("Claude Code CLI", () => {
  it(
    "sends its Messages request (fields recorded) and prints the translated answer",
    async () => {
      const s = await serve(() => ({ chunks: textChunks("sluice-plain-answer"), finishReason: "stop", usage: { input: 123, output: 7 } }));
      const run = await runClaude("say hi", { baseUrl: s.url, model: "claude-sonnet-5" });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.result).toMatchObject({ result: "sluice-plain-answer", is_error: false });
      expect(run.result!.usage).toMatchObject({ input_tokens: 123, output_tokens: 7 });

      const [req] = messagesCalls(s);
      expect(req!.query).toBe("beta=true");
      expect(req!.headers).toMatchObject({ "anthropic-version": "2023-06-01", "x-api-key": "<redacted>", "content-type": "application/json" });
      expect(req!.headers["user-agent"]).toMatch(/^claude-cli\/2\.1\.\d+/);
      expect(req!.headers["anthropic-beta"]).toContain("claude-code-20250219");
      const body = req!.body as Record<string, unknown>;
      expect(body).toMatchObject({ model: "claude-sonnet-5", stream: true, thinking: { type: "adaptive" }, output_config: { effort: "high" } });
      for (const field of ["max_tokens", "metadata", "context_management", "system", "tools", "messages"]) expect(body).toHaveProperty(field);
      expect((body.messages as Array<{ role: string }>).map((m) => m.role)).toContain("system");

      // translated: the billing tag left out of the system prompt, the tools offered as functions
      const { chat } = s.calls[0]!;
      expect(chat.messages[0]!.role).toBe("system");
      expect(String(chat.messages[0]!.content)).not.toContain("x-anthropic-billing-header");
      const bash = (chat.tools as Array<{ function: { name: string; parameters: { required?: string[] } } }>).find((t) => t.function.name === "Bash");
      expect(bash?.function.parameters.required).toEqual(["command"]);
    },
    CLI_TIMEOUT,
  );

  it(
    "runs a whole tool loop: the model asks for Bash, Claude Code runs it, the model repeats its output",
    async () => {
      const marker = `sluice-${Math.floor(Math.random() * 1e9)}-marker`;
      const s = await serve((chat) => {
        const last = chat.messages.at(-1)!;
        if (last.role === "tool") return { chunks: textChunks(`The command printed: ${String(last.content).trim()}`), finishReason: "stop" };
        const command = { command: `echo ${marker}`, description: "Print the marker" };
        return { chunks: [...textChunks("Running it."), ...toolCallChunks(0, "call_m1", "Bash", command)], finishReason: "tool_calls" };
      });
      const run = await runClaude("Run the marker command and tell me what it printed.", { baseUrl: s.url, model: "claude-sonnet-5", args: ["--allowedTools", "Bash"] });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.result).toMatchObject({ result: `The command printed: ${marker}`, num_turns: 2 });

      expect(s.calls).toHaveLength(2);
      const second = s.calls[1]!.chat.messages;
      const assistant = second.findLast((m) => m.role === "assistant")!;
      expect(assistant.tool_calls).toEqual([{ id: "call_m1", type: "function", function: { name: "Bash", arguments: JSON.stringify({ command: `echo ${marker}`, description: "Print the marker" }) } }]);
      expect(second.at(-1)).toEqual({ role: "tool", tool_call_id: "call_m1", content: marker });
      // what Claude Code sent back: the tool_use with the id Sluice gave it, the tool_result for it
      const sent = (messagesCalls(s)[1]!.body as { messages: Array<{ role: string; content: unknown }> }).messages;
      expect(JSON.stringify(sent.at(-2))).toContain('"id":"toolu_call_m1"');
      expect(sent.at(-1)!.content).toEqual([expect.objectContaining({ type: "tool_result", tool_use_id: "toolu_call_m1", content: marker, is_error: false })]);
    },
    CLI_TIMEOUT,
  );

  it(
    "retries a 503 overloaded_error after its Retry-After, then gets the answer",
    async () => {
      const s = await serve((_chat, n) => {
        if (n === 0) throw channelBusy("qwen3-coder");
        return { chunks: textChunks("after-the-retry"), finishReason: "stop" };
      });
      const run = await runClaude("say hi", { baseUrl: s.url, model: "claude-sonnet-5" });
      expect(run.result).toMatchObject({ result: "after-the-retry", is_error: false });
      const [first, second] = messagesCalls(s);
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(900);
    },
    CLI_TIMEOUT,
  );

  it(
    "asks again for a whole answer after a stream that failed past its first byte",
    async () => {
      const s = await serve((_chat, n) => {
        if (n === 0) return { chunks: textChunks("never completed", 3), finishReason: "stop", failAfter: { chunks: 1, error: streamCut("qwen3-coder") } };
        return { chunks: textChunks("whole-fallback-answer"), finishReason: "stop" };
      });
      const run = await runClaude("say hi", { baseUrl: s.url, model: "claude-sonnet-5" });
      expect(run.result).toMatchObject({ result: "whole-fallback-answer", is_error: false });
      expect(s.calls.map((c) => c.ctx.stream)).toEqual([true, false]);
    },
    CLI_TIMEOUT,
  );

  it(
    "reads the numbers of 'prompt is too long' and does not retry it",
    async () => {
      const s = await serve(() => {
        throw Object.assign(new GatewayError(400, "context_length_exceeded", "too long"), { promptTokens: 250000, maxContext: 200000 });
      });
      const run = await runClaude("say hi", { baseUrl: s.url, model: "claude-sonnet-5" });
      expect(run.result).toMatchObject({ is_error: true, api_error_status: 400 });
      expect(run.result!.result).toMatch(/250000 tokens \(limit 200000\)/);
      expect(messagesCalls(s)).toHaveLength(1);
    },
    CLI_TIMEOUT,
  );
});
