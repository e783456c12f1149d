// The real Claude Code CLI against the real gateway, Claude's model names aliased to private models
// behind a scripted Chat Completions model server; a recording pass-through between the CLI and the
// gateway keeps what the CLI sent and got. A plain answer and a whole Bash tool loop, both billed
// with the model server's tokens; "prompt is too long" with the count count_tokens gives; a stream
// cut mid-answer (billed) and the CLI's whole-answer fallback; its retries of a failing model
// server, each counted by QPM, and none of a spent budget.
import { afterEach, describe, expect, it } from "vitest";
import { runClaude, type ClaudeOptions } from "./support/claude-code.js";
import { CODER, DEV_KEY, PACED_KEY, THRIFTY_KEY, TINY_CONTEXT, startMessagesGateway, type ConfigChanges, type MessagesGateway } from "./support/messages-gateway.js";
import { startRecordingProxy, type RecordingProxy } from "./support/recording-proxy.js";
import { textChunks, toolCallChunks, type ModelScript } from "./support/scripted-upstream.js";

const CLI_TIMEOUT = 150_000;
let g: MessagesGateway | undefined;
let proxy: RecordingProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await g?.close();
  g = proxy = undefined;
});

async function serve(script: ModelScript, changes?: ConfigChanges): Promise<{ g: MessagesGateway; proxy: RecordingProxy }> {
  g = await startMessagesGateway(script, changes);
  proxy = await startRecordingProxy(g.url);
  return { g, proxy };
}

function claude(prompt: string, opts: Partial<ClaudeOptions> = {}) {
  return runClaude(prompt, { baseUrl: proxy!.url, apiKey: DEV_KEY, model: "claude-sonnet-5", ...opts });
}

const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion });
const messagesCalls = () => proxy!.to("/v1/messages");

describe("Claude Code CLI through the gateway", () => {
  it(
    "answers plainly: the aliased model called with Claude Code's request translated, billed with the model server's tokens",
    async () => {
      await serve(() => ({ chunks: textChunks("sluice-plain-answer"), finishReason: "stop", usage: usage(123, 7) }));
      const run = await claude("say hi");
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.result).toMatchObject({ result: "sluice-plain-answer", is_error: false });
      expect(run.result!.usage).toMatchObject({ input_tokens: 123, output_tokens: 7 });

      // what Claude Code sent: its key as x-api-key, ?beta=true, fields a chat model cannot honour
      const [sent] = messagesCalls();
      expect(sent!.query).toBe("beta=true");
      expect(sent!.headers).toMatchObject({ "x-api-key": "<redacted>", "anthropic-version": "2023-06-01" });
      expect(sent!.body).toMatchObject({ model: "claude-sonnet-5", stream: true, thinking: { type: "adaptive" } });
      // what the model server got: the private model, max_tokens lowered to its maxResponse, Claude
      // Code's tools as functions, its system prompt without Anthropic's billing tag
      const [upstream] = g!.upstream.requests;
      expect(upstream!.body).toMatchObject({ model: CODER, max_tokens: 32000, stream: true });
      expect(upstream!.body.messages[0]!.role).toBe("system");
      expect(String(upstream!.body.messages[0]!.content)).not.toContain("x-anthropic-billing-header");
      const tools = upstream!.body.tools as Array<{ function: { name: string; parameters: { required?: string[] } } }>;
      expect(tools.find((t) => t.function.name === "Bash")?.function.parameters.required).toEqual(["command"]);
      for (const field of ["thinking", "context_management", "output_config", "metadata"]) expect(upstream!.body).not.toHaveProperty(field);

      expect(g!.rows).toEqual([expect.objectContaining({ appId: "coder", keyName: "dev", model: CODER, inputTokens: 123, outputTokens: 7, status: 200, finishReason: "stop" })]);
    },
    CLI_TIMEOUT,
  );

  it(
    "runs a whole tool loop: the model asks for Bash, Claude Code runs it, the model repeats its output; both calls billed",
    async () => {
      const marker = `sluice-${Math.floor(Math.random() * 1e9)}-marker`;
      await serve((req) => {
        const last = req.body.messages.at(-1)!;
        if (last.role === "tool") return { chunks: textChunks(`The command printed: ${String(last.content).trim()}`), finishReason: "stop", usage: usage(2200, 11) };
        const command = { command: `echo ${marker}`, description: "Print the marker" };
        return { chunks: [...textChunks("Running it."), ...toolCallChunks(0, "call_m1", "Bash", command)], finishReason: "tool_calls", usage: usage(2100, 40) };
      });
      const run = await claude("Run the marker command and tell me what it printed.", { args: ["--allowedTools", "Bash"] });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.result).toMatchObject({ result: `The command printed: ${marker}`, num_turns: 2, is_error: false });
      // the CLI adds up its calls' usage: the model server's tokens, as the gateway reported them
      expect(run.result!.usage).toMatchObject({ input_tokens: 2100 + 2200, output_tokens: 40 + 11 });

      expect(g!.upstream.requests).toHaveLength(2);
      const second = g!.upstream.requests[1]!.body.messages;
      const assistant = second.findLast((m) => m.role === "assistant")!;
      expect(assistant.tool_calls).toEqual([{ id: "call_m1", type: "function", function: { name: "Bash", arguments: JSON.stringify({ command: `echo ${marker}`, description: "Print the marker" }) } }]);
      expect(second.at(-1)).toEqual({ role: "tool", tool_call_id: "call_m1", content: marker });
      // what Claude Code sent back: the tool_use with the id Sluice gave it, the tool_result for it
      const sent = (messagesCalls()[1]!.body as { messages: Array<{ role: string; content: unknown }> }).messages;
      expect(JSON.stringify(sent.at(-2))).toContain('"id":"toolu_call_m1"');
      expect(sent.at(-1)!.content).toEqual([expect.objectContaining({ type: "tool_result", tool_use_id: "toolu_call_m1", content: marker, is_error: false })]);

      expect(g!.rows.map((r) => [r.model, r.inputTokens, r.outputTokens, r.finishReason, r.status])).toEqual([
        [CODER, 2100, 40, "tool_calls", 200],
        [CODER, 2200, 11, "stop", 200],
      ]);
    },
    CLI_TIMEOUT,
  );

  it(
    "is refused 'prompt is too long: N tokens > M maximum' on a small model, N the count_tokens of its request, and reports it",
    async () => {
      await serve(() => ({ chunks: textChunks("never"), finishReason: "stop" }));
      const run = await claude("say hi", { model: "claude-tiny" });
      expect(run.result).toMatchObject({ is_error: true, api_error_status: 400, terminal_reason: "prompt_too_long" });
      expect(messagesCalls()).toHaveLength(1);
      const [sent] = messagesCalls();
      expect(sent!.status).toBe(400);

      // the same body, counted: Claude Code's system prompt, messages and tool definitions
      const { max_tokens: _, stream: __, ...countable } = sent!.body as Record<string, unknown>;
      const counted = await fetch(`${g!.url}/v1/messages/count_tokens`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": DEV_KEY },
        body: JSON.stringify(countable),
      }).then((r) => r.json() as Promise<{ input_tokens: number }>);
      expect(counted.input_tokens).toBeGreaterThan(5 * TINY_CONTEXT);
      // Claude Code read both numbers (its words: "the request is ~N tokens (limit M)")
      expect(run.result!.result).toContain(`~${counted.input_tokens} tokens (limit ${TINY_CONTEXT - 1})`);
      expect(g!.upstream.requests).toHaveLength(0);
      expect(g!.rows).toHaveLength(0);
    },
    CLI_TIMEOUT,
  );

  it(
    "asks again for a whole answer after a stream cut mid-answer; the cut answer is billed for what it generated",
    async () => {
      await serve((req, n) => {
        if (n === 0) return { chunks: textChunks("never completed, this answer", 4), finishReason: "stop", cutAfter: 2, chunkDelayMs: 20 };
        return { chunks: textChunks("whole-fallback-answer"), finishReason: "stop", usage: usage(1900, 4) };
      });
      const run = await claude("say hi");
      expect(run.result).toMatchObject({ result: "whole-fallback-answer", is_error: false });
      expect(g!.upstream.requests.map((r) => r.body.stream)).toEqual([true, false]);
      const [cut, whole] = g!.rows;
      expect(cut).toMatchObject({ status: 502, finishReason: "upstream_error" });
      // no usage came before the cut: the prompt and the relayed text, counted by the gateway
      expect(cut!.inputTokens).toBeGreaterThan(10_000);
      expect(cut!.outputTokens).toBeGreaterThan(0);
      expect(whole).toMatchObject({ status: 200, inputTokens: 1900, outputTokens: 4, finishReason: "stop" });
    },
    CLI_TIMEOUT,
  );
});

describe("Claude Code CLI retries through the gateway", () => {
  it(
    "retries a failing model server, then the breaker's overloaded_error after its Retry-After, and gets the answer",
    async () => {
      await serve((_req, n) => (n === 0 ? { chunks: [], finishReason: "stop", status: 503 } : { chunks: textChunks("after-the-retry"), finishReason: "stop", usage: usage(50, 3) }), {
        extra: { routing: { breaker: { failures: 1, cooldownMs: 1000 } } },
      });
      const run = await claude("say hi");
      expect(run.result).toMatchObject({ result: "after-the-retry", is_error: false });
      const calls = messagesCalls();
      expect(calls[0]!.status).toBe(502);
      expect(calls.at(-1)!.status).toBe(200);
      // between them, only the breaker's 503 overloaded_error (the model server was not called)
      expect(calls.slice(1, -1).every((c) => c.status === 503 && c.answerHeaders!["retry-after"] === "1")).toBe(true);
      expect(g!.upstream.requests).toHaveLength(2);
      expect(calls.at(-1)!.at - calls[0]!.at).toBeGreaterThanOrEqual(950);
    },
    CLI_TIMEOUT,
  );

  it(
    "has every retry counted by the key's QPM (two a minute), and does not retry a spent budget",
    async () => {
      await serve(() => ({ chunks: [], finishReason: "stop", status: 503 }));
      const paced = await claude("say hi", { apiKey: PACED_KEY, env: { CLAUDE_CODE_MAX_RETRIES: "2" } });
      expect(paced.result).toMatchObject({ is_error: true, api_error_status: 429 });
      expect(messagesCalls().map((c) => c.status)).toEqual([502, 502, 429]);
      expect(g!.upstream.requests).toHaveLength(2);

      // the budget (0.05 points) cannot pay for Claude Code's prompt: refused once, not retried
      const thrifty = await claude("say hi", { apiKey: THRIFTY_KEY });
      expect(thrifty.result).toMatchObject({ is_error: true, api_error_status: 429 });
      const refused = messagesCalls().slice(3);
      expect(refused.map((c) => [c.status, c.answerHeaders!["x-should-retry"]])).toEqual([[429, "false"]]);
      expect(g!.upstream.requests).toHaveLength(2);
    },
    CLI_TIMEOUT,
  );
});
