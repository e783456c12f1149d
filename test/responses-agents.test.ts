// @openai/agents (0.14) against the real gateway's /v1/responses over real sockets, the gateway in
// front of a private model that speaks only Chat Completions (test/support/responses-gateway.ts): an
// Agent with a function tool run to completion — the model asks for the tool, the SDK runs it, the
// model answers with its result — whole and streamed, with a namespaced tool, and billed per turn.
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool, toolNamespace } from "@openai/agents";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { APP_KEY, MODEL, startResponsesGateway, type ResponsesGateway } from "./support/responses-gateway.js";
import { reasoningChunks, textChunks, toolCallChunks, type ModelTurn, type ScriptedRequest } from "./support/scripted-upstream.js";

type Message = { role: string; content?: unknown; tool_calls?: Array<{ function: { name: string } }> };
const MARKER = "sluice-marker-456";

/** The private model: asks for get_marker first, then answers with what the tool said. */
function model(req: ScriptedRequest, n: number): ModelTurn {
  const last = (req.body.messages as Message[]).at(-1)!;
  const usage = { prompt_tokens: 40 + n, completion_tokens: 6 };
  if (last.role === "tool") return { chunks: textChunks(`The tool said: ${String(last.content)}`), finishReason: "stop", usage };
  return { chunks: [...reasoningChunks("I should use the tool."), ...toolCallChunks(0, `call_m${n}`, "get_marker", {})], finishReason: "tool_calls", usage };
}

let h: ResponsesGateway;
beforeAll(async () => {
  h = await startResponsesGateway();
  h.play(model);
  setTracingDisabled(true);
  setOpenAIAPI("responses");
  setDefaultOpenAIClient(new OpenAI({ apiKey: APP_KEY, baseURL: h.baseURL, maxRetries: 0 }));
});
afterAll(() => h.close());

const getMarker = tool({
  name: "get_marker",
  description: "Returns the marker.",
  parameters: z.object({}),
  execute: async () => MARKER,
});

describe("@openai/agents: an Agent with a function tool, through the gateway", () => {
  it("runs to completion: the model asks for the tool, the SDK runs it, the model answers with its result", async () => {
    const from = h.upstream.requests.length;
    const rows = h.usage.rows.length;
    const agent = new Agent({ name: "Helper", instructions: "Use your tools.", model: "gpt-5-mini", tools: [getMarker] });
    const result = await run(agent, "What is the marker?");
    expect(result.finalOutput).toBe(`The tool said: ${MARKER}`);

    // what the private model was asked: the tool offered as a function, then its result as a tool message
    const [first, second] = h.upstream.requests.slice(from).map((r) => r.body);
    expect(h.upstream.requests.length - from).toBe(2);
    expect(first).toMatchObject({ model: MODEL, stream: false, messages: [{ role: "system", content: "Use your tools." }, { role: "user", content: "What is the marker?" }] });
    expect(first!.tools).toEqual([{ type: "function", function: { name: "get_marker", description: "Returns the marker.", parameters: expect.any(Object), strict: true } }]);
    // the SDK sends its reasoning item back; it is not sent upstream
    expect((second!.messages as Message[]).map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect((second!.messages as Message[])[3]).toMatchObject({ role: "tool", tool_call_id: expect.stringMatching(/^call_m/), content: MARKER });

    // a usage row per model turn, with the upstream's tokens
    const billed = [await h.usage.row(rows), await h.usage.row(rows + 1)];
    expect(billed.map((r) => [r.appId, r.keyName, r.inputTokens, r.outputTokens, r.finishReason])).toEqual([
      ["coder", "coder-key", 40 + from, 6, "tool_calls"],
      ["coder", "coder-key", 41 + from, 6, "stop"],
    ]);
  });

  it("runs streamed, with the tool in a namespace, the call coming back as the client named it", async () => {
    const from = h.upstream.requests.length;
    const [nsMarker] = toolNamespace({ name: "probe_tools", description: "Probe tools.", tools: [getMarker] });
    const agent = new Agent({ name: "Helper", instructions: "Use your tools.", model: MODEL, tools: [nsMarker!] });
    const result = await run(agent, "What is the marker?", { stream: true });
    let text = "";
    for await (const piece of result.toTextStream()) text += piece;
    await result.completed;
    expect(text).toBe(`The tool said: ${MARKER}`);
    expect(result.finalOutput).toBe(`The tool said: ${MARKER}`);

    const sent = h.upstream.requests.slice(from).map((r) => r.body);
    expect(sent[0]).toMatchObject({ stream: true });
    // offered upstream by its own name: the model never sees the namespace
    expect((sent[0]!.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(["get_marker"]);
    const call = result.newItems.find((i) => i.type === "tool_call_item");
    expect(call?.rawItem).toMatchObject({ type: "function_call", name: "get_marker", namespace: "probe_tools" });
    expect((sent[1]!.messages as Message[]).at(-2)).toMatchObject({ role: "assistant", tool_calls: [{ function: { name: "get_marker" } }] });
  });
});
