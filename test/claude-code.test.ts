// The real Claude Code CLI against the real gateway: the recipe of docs/claude-code.md as written,
// then Claude's model names aliased to private models
// behind a scripted Chat Completions model server; a recording pass-through between the CLI and the
// gateway keeps what the CLI sent and got. A plain answer and a whole Bash tool loop, both billed
// with the model server's tokens; "prompt is too long" with the count count_tokens gives, reported
// (a single exchange) or compacted (a long conversation); a stream cut mid-answer (billed) and the
// CLI's whole-answer fallback; its retries of a failing model server, each counted by QPM, and none
// of a wrong key or a spent budget.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runClaude, type ClaudeOptions } from "./support/claude-code.js";
import { CODER, DEV_KEY, PACED_KEY, THRIFTY_KEY, TINY_CONTEXT, startMessagesGateway, type ConfigChanges, type MessagesGateway } from "./support/messages-gateway.js";
import { startGateway } from "./support/gateway.js";
import { startRecordingProxy, type RecordingProxy } from "./support/recording-proxy.js";
import { startScriptedUpstream, textChunks, toolCallChunks, type ModelScript } from "./support/scripted-upstream.js";

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

/** The gateway's count_tokens of a Messages body Claude Code sent. */
async function countTokens(url: string, body: unknown): Promise<number> {
  const { max_tokens: _, stream: __, ...countable } = body as Record<string, unknown>;
  const res = await fetch(`${url}/v1/messages/count_tokens`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": DEV_KEY }, body: JSON.stringify(countable) });
  return ((await res.json()) as { input_tokens: number }).input_tokens;
}

/** The recipe of docs/claude-code.md: its config.json and the commands of its shell block. */
function readRecipe(): { config: Record<string, unknown>; shell: string[] } {
  const doc = readFileSync(new URL("../docs/claude-code.md", import.meta.url), "utf8");
  const recipe = doc.slice(doc.indexOf("## The recipe"));
  const blocks = [...recipe.matchAll(/```(\w+)\n([\s\S]*?)```/g)];
  const block = (lang: string) => blocks.find((m) => m[1] === lang)![2]!.split("\n").map((l) => l.trim());
  return { config: JSON.parse(block("json").join("\n")) as Record<string, unknown>, shell: block("sh").map((l) => l.replace(/\s+#.*$/, "")).filter(Boolean) };
}

describe("Claude Code CLI through the gateway", () => {
  it(
    "runs the recipe of docs/claude-code.md as written: its config, its three variables, its command",
    async () => {
      const { config, shell } = readRecipe();
      const upstream = await startScriptedUpstream(() => ({ chunks: textChunks("hi from qwen3-coder"), finishReason: "stop", usage: usage(321, 5) }));
      // the recipe's model server is this test's; its key comes from the environment, as written
      const channels = (config.channels as Array<Record<string, unknown>>).map((c) => ({ ...c, baseUrl: upstream.url, healthCheck: { intervalMs: 0 } }));
      const codingKey = "sk-sluice-recipe-key-0001";
      const gw = await startGateway({ ...config, channels }, { env: { CODING_KEY: codingKey } });
      try {
        const exports = Object.fromEntries(shell.filter((l) => l.startsWith("export ")).map((l) => l.slice(7).split("=") as [string, string]));
        expect(Object.keys(exports)).toEqual(["ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]);
        expect(shell.at(-1)).toBe('claude -p "say hi" --output-format json');
        const env = { ...exports, ANTHROPIC_BASE_URL: gw.url, ANTHROPIC_API_KEY: codingKey };
        const run = await runClaude("say hi", { baseUrl: env.ANTHROPIC_BASE_URL, apiKey: env.ANTHROPIC_API_KEY, env });
        expect(run.code, run.stdout + run.stderr).toBe(0);
        expect(run.result).toMatchObject({ result: "hi from qwen3-coder", is_error: false });
        // Claude Code's own model name, through the alias, to the model server's model
        expect(upstream.requests[0]!.body).toMatchObject({ model: "qwen3-coder", max_tokens: 16384 });
        const summary = await gw.store.summarizeUsage({});
        // the recipe's prices: 321 × 0.5 / 1000 + 5 × 1.5 / 1000, within its budgets
        expect(summary.models).toEqual([{ model: "qwen3-coder", requests: 1, inputTokens: 321, outputTokens: 5, points: 0.168 }]);
      } finally {
        await gw.close();
        await upstream.close();
      }
    },
    CLI_TIMEOUT,
  );

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
      const counted = { input_tokens: await countTokens(g!.url, sent!.body) };
      // far past the context: counted no further than twice it (docs/api.md#limits)
      expect(counted.input_tokens).toBe(2 * TINY_CONTEXT);
      // Claude Code read both numbers (its words: "the request is ~N tokens (limit M)")
      expect(run.result!.result).toContain(`~${counted.input_tokens} tokens (limit ${TINY_CONTEXT - 1})`);
      expect(g!.upstream.requests).toHaveLength(0);
      expect(g!.rows).toHaveLength(0);
    },
    CLI_TIMEOUT,
  );

  it(
    "compacts a long conversation on 'prompt is too long' and answers from the summary",
    async () => {
      // the model: three Bash calls (1,500 numbers each), a summary when Claude Code compacts, an answer
      const script: ModelScript = (req) => {
        // Claude Code may put a system message after the user's turn
        const turn = req.body.messages.filter((m) => m.role !== "system").at(-1)!;
        const said = JSON.stringify(turn.content);
        const results = req.body.messages.filter((m) => m.role === "tool").length;
        if (said.includes("Do NOT call any tools")) return { chunks: textChunks("<analysis>Three runs.</analysis>\n<summary>Printed 1-1500, 10001-11500, 20001-21500.</summary>"), finishReason: "stop", usage: usage(900, 20) };
        if (said.includes("Print numbers three times") || (turn.role === "tool" && results < 3)) {
          const command = { command: `seq ${results * 10000 + 1} ${results * 10000 + 1500}`, description: "Print numbers" };
          return { chunks: toolCallChunks(0, `call_${results}`, "Bash", command), finishReason: "tool_calls" };
        }
        if (turn.role === "tool") return { chunks: textChunks("Printed three times."), finishReason: "stop" };
        return { chunks: textChunks("answer-after-compaction: 21500"), finishReason: "stop", usage: usage(800, 6) };
      };
      const home = mkdtempSync(join(tmpdir(), "sluice-claude-home-"));
      const roomy = await startMessagesGateway(script, { tinyContext: 200_000 });
      const roomyProxy = await startRecordingProxy(roomy.url);
      try {
        // 1. the conversation, on a model with room for it
        const first = await runClaude("Print numbers three times with Bash, one command each.", { baseUrl: roomyProxy.url, apiKey: DEV_KEY, model: "claude-tiny", args: ["--allowedTools", "Bash"], home });
        expect(first.result).toMatchObject({ result: "Printed three times.", num_turns: 4 });
        const longest = roomyProxy.to("/v1/messages").at(-1)!.body;
        const size = await countTokens(roomy.url, longest);

        // 2. continued where the model's context holds the conversation so far, not one more turn
        await serve(script, { tinyContext: size });
        const run = await claude("What was printed last?", { model: "claude-tiny", args: ["--continue"], home });
        expect(run.result).toMatchObject({ result: "answer-after-compaction: 21500", is_error: false });
        const [refused, compaction, answered] = messagesCalls();
        expect([refused?.status, compaction?.status, answered?.status, messagesCalls().length]).toEqual([400, 200, 200, 3]);
        expect(await countTokens(g!.url, refused!.body)).toBeGreaterThan(size - 1);
        // Claude Code asked the model for a summary, then went on from it with less history
        expect(JSON.stringify(compaction!.body)).toContain("Do NOT call any tools");
        expect(await countTokens(g!.url, answered!.body)).toBeLessThan(size - 1);
        expect(JSON.stringify(answered!.body)).toContain("Printed 1-1500, 10001-11500, 20001-21500.");
        expect(g!.rows.map((r) => [r.status, r.inputTokens, r.outputTokens])).toEqual([
          [200, 900, 20],
          [200, 800, 6],
        ]);
      } finally {
        await roomyProxy.close();
        await roomy.close();
        rmSync(home, { recursive: true, force: true });
      }
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
      // one failure opens the breaker for 2.5 s: longer than Claude Code's first backoff (0.5-1.5 s)
      await serve((_req, n) => (n === 0 ? { chunks: [], finishReason: "stop", status: 503 } : { chunks: textChunks("after-the-retry"), finishReason: "stop", usage: usage(50, 3) }), {
        extra: { routing: { breaker: { failures: 1, cooldownMs: 2500 } } },
      });
      const run = await claude("say hi");
      expect(run.result).toMatchObject({ result: "after-the-retry", is_error: false });
      const calls = messagesCalls();
      expect(calls[0]!.status).toBe(502);
      expect(calls.at(-1)!.status).toBe(200);
      // between them, the breaker's 503 overloaded_error with its Retry-After, which Claude Code
      // waits out; the model server was not called for it
      const overloaded = calls.slice(1, -1);
      expect(overloaded.length).toBeGreaterThanOrEqual(1);
      for (const [i, c] of overloaded.entries()) {
        expect(c.status).toBe(503);
        const wait = Number(c.answerHeaders!["retry-after"]);
        expect(wait).toBeGreaterThanOrEqual(1);
        expect(calls[i + 2]!.at - c.at).toBeGreaterThanOrEqual(wait * 1000 - 50);
      }
      expect(g!.upstream.requests).toHaveLength(2);
      expect(g!.rows.map((r) => r.status)).toEqual([502, 200]);
    },
    CLI_TIMEOUT,
  );

  it(
    "has every retry counted by the key's QPM (two a minute): the model server is called twice",
    async () => {
      await serve(() => ({ chunks: [], finishReason: "stop", status: 503 }));
      const paced = await claude("say hi", { apiKey: PACED_KEY, env: { CLAUDE_CODE_MAX_RETRIES: "2" } });
      expect(paced.result).toMatchObject({ is_error: true, api_error_status: 429 });
      expect(messagesCalls().map((c) => c.status)).toEqual([502, 502, 429]);
      expect(g!.upstream.requests).toHaveLength(2);
    },
    CLI_TIMEOUT,
  );

  it(
    "does not retry what a retry cannot change: a wrong key, a spent budget",
    async () => {
      await serve(() => ({ chunks: textChunks("never"), finishReason: "stop" }));
      const wrong = await claude("say hi", { apiKey: "sk-sluice-wrong-key-0001" });
      expect(wrong.result).toMatchObject({ is_error: true, api_error_status: 401 });
      expect(wrong.result!.result).toContain("Invalid API key");
      // the budget (0.05 points) cannot pay for Claude Code's prompt
      const thrifty = await claude("say hi", { apiKey: THRIFTY_KEY });
      expect(thrifty.result).toMatchObject({ is_error: true, api_error_status: 429 });
      expect(thrifty.result!.result).toContain("not enough of its points budget left");
      expect(messagesCalls().map((c) => [c.status, c.answerHeaders!["x-should-retry"]])).toEqual([
        [401, "false"],
        [429, "false"],
      ]);
      expect(g!.upstream.requests).toHaveLength(0);
    },
    CLI_TIMEOUT,
  );
});
