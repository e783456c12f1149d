// The real Codex CLI (`codex exec`, from @openai/codex; test/support/codex-cli.ts) against the real
// gateway over real sockets, the gateway in front of a private model that speaks only Chat
// Completions (test/support/responses-gateway.ts), offline: a plain answer, a tool loop through its
// `exec_command` tool, a call of a namespaced tool, a file edit through its freeform `apply_patch`,
// a prompt over the model's window and a stream cut mid-answer — with the usage rows each writes.
// A recording proxy between Codex and the gateway shows what Codex sends: docs/codex.md records it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runCodex } from "./support/codex-cli.js";
import { startRecordingProxy, type RecordingProxy } from "./support/recording-proxy.js";
import { APP_KEY, MODEL, OTHER_KEY, startResponsesGateway, type ResponsesGateway } from "./support/responses-gateway.js";
import { reasoningChunks, textChunks, toolCallChunks, type ModelTurn, type ScriptedRequest } from "./support/scripted-upstream.js";

const MARKER = "sluice-marker-123";
const PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello from a private model\n*** End Patch\n";
const USAGE = { prompt_tokens: 9100, completion_tokens: 12 };

type Message = { role: string; content?: unknown; tool_call_id?: string; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> };
const messagesOf = (req: ScriptedRequest) => req.body.messages as Message[];
const textOf = (content: unknown) => (typeof content === "string" ? content : JSON.stringify(content));

/** The private model: the prompt (Codex's last user message) says what to do. */
function model(req: ScriptedRequest, n: number): ModelTurn {
  const last = messagesOf(req).at(-1)!;
  const prompt = textOf(messagesOf(req).findLast((m) => m.role === "user")?.content);
  if (last.role === "tool") {
    const out = textOf(last.content);
    return { chunks: textChunks(`Codex ran it: ${out.includes(MARKER) ? MARKER : out.trim().slice(0, 200)}`), finishReason: "stop", usage: USAGE };
  }
  // `login: false`: a login shell here reads profiles that take seconds
  if (prompt.includes("run the marker")) {
    const call = toolCallChunks(0, `call_x${n}`, "exec_command", { cmd: `echo ${MARKER}`, login: false });
    return { chunks: [...reasoningChunks("Run it."), ...call], finishReason: "tool_calls", usage: USAGE };
  }
  if (prompt.includes("wait for agents")) return { chunks: toolCallChunks(0, `call_n${n}`, "wait_agent", { targets: ["no-such-agent"], timeout_ms: 10 }), finishReason: "tool_calls", usage: USAGE };
  if (prompt.includes("add the file")) return { chunks: toolCallChunks(0, `call_p${n}`, "apply_patch", { input: PATCH }), finishReason: "tool_calls", usage: USAGE };
  // paced, so what was written before the cut leaves the model server before its socket is destroyed
  if (prompt.includes("cut")) return { chunks: textChunks("This answer will be cut off", 5), finishReason: "stop", cutAfter: 2, chunkDelayMs: 10 };
  return { chunks: [...reasoningChunks("A greeting is asked for."), ...textChunks("Hello from the private model.")], finishReason: "stop", usage: USAGE };
}

let h: ResponsesGateway;
let proxy: RecordingProxy;
beforeAll(async () => {
  h = await startResponsesGateway();
  proxy = await startRecordingProxy(h.gw.url, [APP_KEY, OTHER_KEY]);
});
afterAll(async () => {
  await proxy.close();
  await h.close();
});
beforeEach(() => h.play(model));

const codex = (prompt: string, opts: { model?: string; retries?: number } = {}) => runCodex({ baseURL: `${proxy.url}/v1`, key: APP_KEY, prompt, ...opts });

describe("Codex CLI through the gateway", () => {
  it("answers a plain prompt: codex exec prints the model's text; one usage row with the upstream's tokens", { timeout: 60_000 }, async () => {
    const [calls, requests, rows] = [proxy.calls.length, h.upstream.requests.length, h.usage.rows.length];
    // the recipe of docs/codex.md: Codex names the private model itself
    const out = await codex("say hello", { model: MODEL });
    expect(out.stdout.trim(), out.stderr).toBe("Hello from the private model.");
    expect(out.code).toBe(0);
    expect(out.stderr).not.toMatch(/ERROR/);
    expect(out.stderr).toMatch(/tokens used\s+9,?112/);

    // one POST /v1/responses, streamed, and nothing else (no /models, no other host: see codex-cli.ts)
    const sent = proxy.calls.slice(calls);
    expect(sent.map((c) => `${c.method} ${c.path}`)).toEqual(["POST /v1/responses"]);
    const { headers, body } = sent[0]!;
    expect(headers).toMatchObject({ authorization: "Bearer <secret>", accept: "text/event-stream", originator: "codex_exec" });
    expect(body).toMatchObject({ model: MODEL, stream: true, tool_choice: "auto", parallel_tool_calls: true, reasoning: { summary: "auto" }, store: false, include: ["reasoning.encrypted_content"] });
    expect(body).not.toHaveProperty("instructions"); // its system prompt is the first developer item
    expect(body.input.map((i: { role: string }) => i.role)).toEqual(["developer", "developer", "user", "user"]);
    const tools: Array<{ type: string; name?: string }> = body.tools;
    expect(tools.find((t) => t.name === "exec_command")).toMatchObject({ type: "function", strict: false });
    expect(tools.find((t) => t.type === "namespace")).toMatchObject({ name: "multi_agent_v1" });
    expect(tools.find((t) => t.type === "web_search")).toBeTruthy();

    // what the private model got: one system message first, functions only
    const chat = h.upstream.requests.slice(requests);
    expect(chat).toHaveLength(1);
    expect(chat[0]!.body).toMatchObject({ model: MODEL, stream: true, stream_options: { include_usage: true } });
    expect(messagesOf(chat[0]!).map((m) => m.role)).toEqual(["system", "user", "user"]);
    const offered = (chat[0]!.body.tools as Array<{ type: string; function: { name: string } }>).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(["exec_command", "wait_agent", "spawn_agent"]));
    expect(offered).not.toContain("web_search");
    expect(await h.usage.row(rows)).toMatchObject({ appId: "coder", keyName: "coder-key", model: MODEL, inputTokens: 9100, outputTokens: 12, status: 200, finishReason: "stop" });
  });

  it("runs a tool loop: the model calls exec_command, Codex runs it and sends its output, the answer is printed", { timeout: 60_000 }, async () => {
    const [calls, requests, rows] = [proxy.calls.length, h.upstream.requests.length, h.usage.rows.length];
    // a name Codex does not know, through an alias of the private model
    const out = await codex("run the marker");
    expect(out.stdout.trim(), out.stderr).toBe(`Codex ran it: ${MARKER}`);
    expect(out.code).toBe(0);
    expect(out.stderr).toContain(`echo ${MARKER}`);

    // the second request sends the whole conversation again: the reasoning item (not sent upstream), the call, its output
    const bodies = proxy.calls.slice(calls).map((c) => c.body);
    expect(bodies).toHaveLength(2);
    const [reasoning, call, output] = bodies[1].input.slice(-3);
    expect(reasoning).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: "Run it." }] });
    expect(call).toMatchObject({ type: "function_call", name: "exec_command", call_id: `call_x${requests}`, status: "completed" });
    expect(output).toMatchObject({ type: "function_call_output", call_id: call.call_id });
    expect(output.output).toContain(MARKER);

    const chat = h.upstream.requests.slice(requests);
    expect(messagesOf(chat[1]!).slice(-2)).toMatchObject([
      { role: "assistant", content: null, tool_calls: [{ id: call.call_id, function: { name: "exec_command" } }] },
      { role: "tool", tool_call_id: call.call_id },
    ]);
    const billed = [await h.usage.row(rows), await h.usage.row(rows + 1)];
    expect(billed.map((r) => [r.inputTokens, r.outputTokens, r.status, r.finishReason])).toEqual([
      [9100, 12, 200, "tool_calls"],
      [9100, 12, 200, "stop"],
    ]);
  });

  it("calls a tool of its multi_agent_v1 namespace: the call comes back namespaced, Codex runs it and answers", { timeout: 60_000 }, async () => {
    const calls = proxy.calls.length;
    const out = await codex("wait for agents");
    expect(out.code, out.stderr).toBe(0);
    const bodies = proxy.calls.slice(calls).map((c) => c.body);
    expect(bodies).toHaveLength(2);
    const [call, output] = bodies[1].input.slice(-2);
    expect(call).toMatchObject({ type: "function_call", name: "wait_agent", namespace: "multi_agent_v1" });
    expect(output).toMatchObject({ type: "function_call_output", call_id: call.call_id });
    // Codex's own wait_agent ran: it refused the made-up agent id (a call it could not place would be
    // answered "unsupported call")
    expect(output.output).toContain("invalid agent id no-such-agent");
    expect(out.stdout.trim()).toBe(`Codex ran it: ${output.output.trim().slice(0, 200)}`);
  });

  it("with an OpenAI model name, edits a file through its freeform apply_patch tool, offered as a function", { timeout: 60_000 }, async () => {
    const [calls, requests] = [proxy.calls.length, h.upstream.requests.length];
    const out = await codex("add the file hello.txt", { model: "gpt-5.5" });
    expect(out.code, out.stderr).toBe(0);
    expect(out.files["hello.txt"]).toBe("hello from a private model\n");

    const bodies = proxy.calls.slice(calls).map((c) => c.body);
    expect(bodies[0]).toMatchObject({ model: "gpt-5.5", reasoning: { effort: "medium" }, text: { verbosity: "low" } });
    expect(bodies[0].tools.find((t: { name?: string }) => t.name === "apply_patch")).toMatchObject({ type: "custom", format: { type: "grammar", syntax: "lark" } });
    const [call, output] = bodies[1].input.slice(-2);
    expect(call).toMatchObject({ type: "custom_tool_call", name: "apply_patch", input: PATCH });
    expect(output).toMatchObject({ type: "custom_tool_call_output", call_id: call.call_id });
    expect(out.stdout).toContain("Codex ran it:");

    const chat = h.upstream.requests.slice(requests);
    expect(chat[0]!.body).toMatchObject({ model: MODEL, reasoning_effort: "medium" });
    const patchTool = (chat[0]!.body.tools as Array<{ function: { name: string; parameters: unknown } }>).find((t) => t.function.name === "apply_patch");
    expect(patchTool?.function.parameters).toMatchObject({ type: "object", properties: { input: { type: "string" } }, required: ["input"] });
  });

  it("fails the turn on a stream cut after the first byte, retries it when allowed, and bills each attempt's partial output", { timeout: 60_000 }, async () => {
    const [requests, rows] = [h.upstream.requests.length, h.usage.rows.length];
    const out = await codex("cut this", { retries: 1 });
    expect(out.code).toBe(1);
    expect(out.stdout).toBe("");
    expect(out.stderr).toContain("ended the answer before it was complete");
    expect(h.upstream.requests.length - requests).toBe(2); // the request, and one retry of it
    const billed = [await h.usage.row(rows), await h.usage.row(rows + 1)];
    for (const row of billed) expect(row).toMatchObject({ status: 502, finishReason: "upstream_error" });
    // no usage came before the cut: the gateway counted Codex's prompt and the two pieces that came
    for (const row of billed) expect(row.inputTokens).toBeGreaterThan(5000);
    expect(billed.map((r) => [r.outputTokens, r.points])).toEqual(billed.map((r) => [2, (r.inputTokens + 2 * 2) / 1000]));
  });
});

describe("Codex CLI on a model whose window its prompt does not fit", () => {
  let small: ResponsesGateway;
  beforeAll(async () => {
    small = await startResponsesGateway({ model: { maxContext: 4000, maxResponse: 1000 } });
  });
  afterAll(() => small.close());

  it("tells its user the context window is full on the gateway's 400 context_length_exceeded, without retrying", { timeout: 60_000 }, async () => {
    small.play(model);
    const out = await runCodex({ baseURL: `${small.gw.url}/v1`, key: APP_KEY, prompt: "say hello", retries: 2 });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("ran out of room in the model's context window");
    expect(small.upstream.requests).toHaveLength(0);
  });
});
