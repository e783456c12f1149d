// The real Codex CLI (`codex exec`, from @openai/codex) against the Responses dialect over a real
// socket (test/support/responses-probe.ts), offline (test/support/codex-cli.ts): a plain answer, a
// whole tool loop through its `exec_command` tool, and its reaction to errors. What Codex sends is
// checked here too: docs/codex.md records it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/chat/request-schema.js";
import { badRequest } from "../src/http/errors.js";
import { runCodex } from "./support/codex-cli.js";
import { startResponsesProbe, type ModelTurn, type ResponsesProbe } from "./support/responses-probe.js";

const MARKER = "sluice-marker-123";
const PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello from a private model\n*** End Patch\n";

/** The scripted model: the prompt (Codex's last user message) says what to do. */
function model(chat: ChatRequest): ModelTurn {
  const tool = chat.messages.findLast((m) => m.role === "tool");
  const prompt = String(chat.messages.findLast((m) => m.role === "user")?.content ?? "");
  if (tool) return { text: `Codex ran it: ${String(tool.content).includes(MARKER) ? MARKER : String(tool.content).trim()}` };
  // `login: false`: a login shell here reads profiles that take seconds
  if (prompt.includes("run the marker")) return { reasoning: "Run it.", calls: [{ name: "exec_command", arguments: JSON.stringify({ cmd: `echo ${MARKER}`, login: false }) }] };
  if (prompt.includes("add the file")) return { calls: [{ name: "apply_patch", arguments: JSON.stringify({ input: PATCH }) }] };
  if (prompt.includes("too long")) return { error: badRequest("context_length_exceeded", "This model's maximum context length is 100 tokens; the prompt has 120.", "input") };
  if (prompt.includes("cut")) return { text: "This answer will be cut off", cutAfterChunks: 2 };
  return { reasoning: "A greeting is asked for.", text: "Hello from the probe model." };
}

let probe: ResponsesProbe;
beforeAll(async () => {
  probe = await startResponsesProbe(model);
});
afterAll(() => probe.close());

describe("Codex CLI on the Responses dialect", () => {
  it("answers a plain prompt: codex exec prints the model's text", { timeout: 60_000 }, async () => {
    const from = probe.calls.length;
    const out = await runCodex({ baseURL: probe.baseURL, prompt: "say hello" });
    expect(out.stdout.trim(), out.stderr).toBe("Hello from the probe model.");
    expect(out.code).toBe(0);
    expect(out.stderr).not.toMatch(/ERROR/);

    // one POST /v1/responses, streamed, and nothing else (no /models, no other host: see codex-cli.ts)
    const calls = probe.calls.slice(from);
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual(["POST /v1/responses"]);
    const { headers, body } = calls[0]!;
    expect(headers).toMatchObject({ authorization: "Bearer sk-probe-key", accept: "text/event-stream", originator: "codex_exec" });
    expect(headers["session-id"]).toBeTruthy();
    expect(body).toMatchObject({
      model: "made-up-model",
      stream: true,
      tool_choice: "auto",
      parallel_tool_calls: true,
      reasoning: { summary: "auto" },
      store: false,
      include: ["reasoning.encrypted_content"],
    });
    expect(body).not.toHaveProperty("instructions"); // its system prompt is the first developer item
    expect(body).not.toHaveProperty("previous_response_id");
    expect(typeof body.prompt_cache_key).toBe("string");
    expect(typeof body.client_metadata).toBe("object");
    expect(body.input.map((i: { role: string }) => i.role)).toEqual(["developer", "developer", "user", "user"]);
    expect(body.input.at(-1).content).toEqual([{ type: "input_text", text: "say hello" }]);
    // its tools: functions (exec_command among them), a namespace of sub-agent functions, web_search
    const tools: Array<{ type: string; name?: string }> = body.tools;
    expect(tools.find((t) => t.name === "exec_command")).toMatchObject({ type: "function", strict: false });
    expect(tools.find((t) => t.type === "namespace")).toMatchObject({ name: "multi_agent_v1", tools: expect.arrayContaining([expect.objectContaining({ name: "wait_agent" })]) });
    expect(tools.find((t) => t.type === "web_search")).toBeTruthy();

    // what went upstream: one system message first, functions only, no built-ins
    const chat = probe.chats.at(-1)!;
    expect(chat.messages.map((m) => m.role)).toEqual(["system", "user", "user"]);
    const offered = (chat.tools as Array<{ type: string; function: { name: string } }>).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(["exec_command", "wait_agent", "spawn_agent"]));
    expect((chat.tools as Array<{ type: string }>).every((t) => t.type === "function")).toBe(true);
  });

  it("runs a tool loop: the model calls exec_command, Codex runs it and sends its output, the answer is printed", { timeout: 60_000 }, async () => {
    const from = probe.calls.length;
    const out = await runCodex({ baseURL: probe.baseURL, prompt: "run the marker" });
    expect(out.stdout.trim(), out.stderr).toBe(`Codex ran it: ${MARKER}`);
    expect(out.code).toBe(0);
    expect(out.stderr).toContain(`echo ${MARKER}`);

    const bodies = probe.calls.slice(from).map((c) => c.body);
    expect(bodies).toHaveLength(2);
    // the second request sends the whole conversation again, the call (with the item id it was given) and its output
    const [reasoning, call, output] = bodies[1].input.slice(-3);
    expect(reasoning).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: "Run it." }] }); // sent back, not upstream
    expect(call).toMatchObject({ type: "function_call", name: "exec_command", status: "completed" });
    expect(call.id).toMatch(/^fc_/);
    expect(JSON.parse(call.arguments)).toEqual({ cmd: `echo ${MARKER}`, login: false });
    expect(output).toMatchObject({ type: "function_call_output", call_id: call.call_id });
    expect(output.output).toContain(MARKER);
    expect(bodies[1].store).toBe(false);

    const chat = probe.chats.at(-1)!;
    expect(chat.messages.slice(-2)).toMatchObject([
      { role: "assistant", content: null, tool_calls: [{ id: call.call_id, function: { name: "exec_command" } }] },
      { role: "tool", tool_call_id: call.call_id },
    ]);
  });

  it("with an OpenAI model name, edits a file through its freeform apply_patch tool, offered as a function", { timeout: 60_000 }, async () => {
    const from = probe.calls.length;
    const out = await runCodex({ baseURL: probe.baseURL, prompt: "add the file hello.txt", model: "gpt-5.5" });
    expect(out.code, out.stderr).toBe(0);
    expect(out.files["hello.txt"]).toBe("hello from a private model\n");

    const bodies = probe.calls.slice(from).map((c) => c.body);
    expect(bodies[0]).toMatchObject({ model: "gpt-5.5", reasoning: { effort: "medium" }, text: { verbosity: "low" } });
    expect(bodies[0].tools.find((t: { name?: string }) => t.name === "apply_patch")).toMatchObject({ type: "custom", format: { type: "grammar", syntax: "lark" } });
    expect(bodies[0].tools.map((t: { type: string }) => t.type)).toContain("tool_search");
    const [call, output] = bodies[1].input.slice(-2);
    expect(call).toMatchObject({ type: "custom_tool_call", name: "apply_patch", input: PATCH });
    expect(output).toMatchObject({ type: "custom_tool_call_output", call_id: call.call_id });
    expect(out.stdout).toContain("Codex ran it:");
    expect(probe.chats.at(-2)!.reasoning_effort).toBe("medium");
  });

  it("tells its user the context window is full on a 400 context_length_exceeded, without retrying", { timeout: 60_000 }, async () => {
    const from = probe.calls.length;
    const out = await runCodex({ baseURL: probe.baseURL, prompt: "this prompt is too long", retries: 2 });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("ran out of room in the model's context window");
    expect(probe.calls.length - from).toBe(1);
  });

  it("fails the turn on a stream cut after the first byte (response.failed + error), and retries it when allowed", { timeout: 60_000 }, async () => {
    const from = probe.calls.length;
    const out = await runCodex({ baseURL: probe.baseURL, prompt: "cut this", retries: 1 });
    expect(out.code).toBe(1);
    expect(out.stdout).toBe("");
    expect(out.stderr).toContain("The model's answer was cut off.");
    expect(probe.calls.length - from).toBe(2); // the request, and one retry of it
  });
});
