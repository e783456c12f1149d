// The real openai SDK (v6) and @openai/agents against the Responses dialect over a real socket
// (test/support/responses-probe.ts: the dialect's translations, a scripted model behind them).
// What each client sends is checked too: docs/codex.md records it.
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool, toolNamespace } from "@openai/agents";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { ChatRequest } from "../src/chat/request-schema.js";
import { badRequest } from "../src/http/errors.js";
import { startResponsesProbe, type ModelTurn, type ResponsesProbe } from "./support/responses-probe.js";

/** The last tool message the model was sent, if any. */
const toolResult = (chat: ChatRequest) => chat.messages.findLast((m) => m.role === "tool")?.content as string | undefined;
const lastUser = (chat: ChatRequest) => chat.messages.findLast((m) => m.role === "user")?.content;

/** The scripted model: its answer picked by what the last user message asks for. */
function model(chat: ChatRequest): ModelTurn {
  const result = toolResult(chat);
  const ask = JSON.stringify(lastUser(chat) ?? "");
  if (result !== undefined) return { text: `The tool said: ${result}` };
  if (ask.includes("weather")) return { calls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] };
  if (ask.includes("marker")) return { reasoning: "I should use the tool.", calls: [{ name: "get_marker", arguments: "{}" }] };
  if (ask.includes("too long")) return { error: badRequest("context_length_exceeded", "This model's maximum context length is 100 tokens; the prompt has 120.", "input") };
  if (ask.includes("cut")) return { text: "This answer will be cut off here", cutAfterChunks: 3 };
  if (ask.includes("name")) return { text: `You said: ${JSON.stringify(chat.messages.filter((m) => m.role === "user").map((m) => m.content))}` };
  return { text: "Hello from the probe model." };
}

let probe: ResponsesProbe;
let client: OpenAI;

beforeAll(async () => {
  probe = await startResponsesProbe(model);
  client = new OpenAI({ apiKey: "sk-probe-key", baseURL: probe.baseURL, maxRetries: 0 });
});
afterAll(() => probe.close());

describe("openai SDK: responses", () => {
  it("creates a response and reads output_text and usage", async () => {
    const r = await client.responses.create({ model: "gpt-5-mini", input: "hi", instructions: "Be brief." });
    expect(r.output_text).toBe("Hello from the probe model.");
    expect(r.status).toBe("completed");
    expect(r.model).toBe("gpt-5-mini");
    expect(r.usage).toMatchObject({ input_tokens: 10, output_tokens: 5, total_tokens: 15 });
    const sent = probe.calls.at(-1)!;
    expect(sent).toMatchObject({ method: "POST", path: "/v1/responses", body: { model: "gpt-5-mini", input: "hi", instructions: "Be brief." } });
    expect(sent.headers.authorization).toBe("Bearer sk-probe-key");
    expect(probe.chats.at(-1)!.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
    ]);
  });

  it("streams with responses.stream: text deltas, then the final response", async () => {
    const stream = client.responses.stream({ model: "m1", input: "hi" });
    let deltas = "";
    stream.on("response.output_text.delta", (e) => (deltas += e.delta));
    const final = await stream.finalResponse();
    expect(deltas).toBe("Hello from the probe model.");
    expect(final.output_text).toBe("Hello from the probe model.");
    expect(final.status).toBe("completed");
  });

  it("runs a function-call round trip by stream, continuing with previous_response_id", async () => {
    const tools: OpenAI.Responses.Tool[] = [{ type: "function", name: "get_weather", strict: true, parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false } }];
    const events: string[] = [];
    const first = client.responses.stream({ model: "m1", input: "weather in Paris?", tools });
    first.on("event", (e) => events.push(e.type));
    const r1 = await first.finalResponse();
    const call = r1.output.find((o) => o.type === "function_call")!;
    expect(call).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Paris"}' });
    expect(events).toContain("response.function_call_arguments.delta");

    const r2 = await client.responses.create({
      model: "m1",
      previous_response_id: r1.id,
      input: [{ type: "function_call_output", call_id: call.type === "function_call" ? call.call_id : "", output: "18°C, sunny" }],
      tools,
    });
    expect(r2.output_text).toBe("The tool said: 18°C, sunny");
    expect(probe.chats.at(-1)!.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
  });

  it("keeps a conversation across previous_response_id, retrieves it, deletes it", async () => {
    const r1 = await client.responses.create({ model: "m1", input: "my name is Ada" });
    const r2 = await client.responses.create({ model: "m1", input: "what is my name?", previous_response_id: r1.id });
    expect(r2.output_text).toBe('You said: ["my name is Ada","what is my name?"]');
    expect(r2.previous_response_id).toBe(r1.id);

    const got = await client.responses.retrieve(r2.id);
    expect(got).toMatchObject({ id: r2.id, status: "completed", output_text: r2.output_text });
    const deleted = await client.responses.delete(r2.id);
    expect(deleted).toEqual({ id: r2.id, object: "response.deleted", deleted: true });
    expect(probe.calls.at(-1)).toMatchObject({ method: "DELETE", path: `/v1/responses/${r2.id}` });
    await expect(client.responses.retrieve(r2.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.responses.create({ model: "m1", input: "x", previous_response_id: r2.id })).rejects.toMatchObject({
      status: 400,
      code: "previous_response_not_found",
      param: "previous_response_id",
    });
  });

  it("keeps nothing with store: false", async () => {
    const r = await client.responses.create({ model: "m1", input: "hi", store: false });
    expect(probe.stored.has(r.id)).toBe(false);
    await expect(client.responses.retrieve(r.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("surfaces errors as typed APIErrors with code and param", async () => {
    await expect(client.responses.create({ model: "m1", input: [{ type: "function_call", name: "f", arguments: "{}" } as never] })).rejects.toMatchObject({
      constructor: OpenAI.BadRequestError,
      code: "invalid_request",
      param: "input[0].call_id",
    });
    await expect(client.responses.create({ model: "m1", input: "this prompt is too long" })).rejects.toMatchObject({
      status: 400,
      code: "context_length_exceeded",
    });
  });

  it("rejects the stream of an answer cut after the first byte, after response.failed", async () => {
    const stream = client.responses.stream({ model: "m1", input: "cut me" });
    const seen: string[] = [];
    stream.on("event", (e) => seen.push(e.type));
    await expect(stream.finalResponse()).rejects.toThrow("The model's answer was cut off.");
    expect(seen.slice(-2)).toEqual(["response.failed", "error"]);
    expect(seen).not.toContain("response.completed");
  });
});

describe("@openai/agents: an Agent with a function tool", () => {
  beforeAll(() => {
    setTracingDisabled(true);
    setOpenAIAPI("responses");
    setDefaultOpenAIClient(new OpenAI({ apiKey: "sk-probe-key", baseURL: probe.baseURL, maxRetries: 0 }));
  });

  const getMarker = tool({
    name: "get_marker",
    description: "Returns the marker.",
    parameters: z.object({}),
    execute: async () => "sluice-marker-456",
  });

  it("runs to completion: the model asks for the tool, the SDK runs it, the model answers with its result", async () => {
    const from = probe.calls.length;
    const agent = new Agent({ name: "Prober", instructions: "Use your tools.", model: "gpt-5-mini", tools: [getMarker] });
    const result = await run(agent, "What is the marker?");
    expect(result.finalOutput).toBe("The tool said: sluice-marker-456");

    const sent = probe.calls.slice(from).map((c) => c.body);
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatchObject({ model: "gpt-5-mini", instructions: "Use your tools.", input: [{ role: "user", content: "What is the marker?" }], stream: false });
    expect(sent[0].tools).toEqual([{ type: "function", name: "get_marker", description: "Returns the marker.", parameters: expect.any(Object), strict: true }]);
    // the second turn sends the whole conversation back (no previous_response_id), its reasoning item included
    expect(sent[1].previous_response_id ?? null).toBeNull();
    expect(sent[1].input.map((i: { type?: string; role?: string }) => i.type ?? i.role)).toEqual(["user", "reasoning", "function_call", "function_call_output"]);
    expect(probe.chats.at(-1)!.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
  });

  it("runs streamed, and with a namespaced tool", async () => {
    const from = probe.calls.length;
    const [nsMarker] = toolNamespace({ name: "probe_tools", description: "Probe tools.", tools: [getMarker] });
    const agent = new Agent({ name: "Prober", instructions: "Use your tools.", model: "m1", tools: [nsMarker!] });
    const result = await run(agent, "What is the marker?", { stream: true });
    let text = "";
    for await (const e of result.toTextStream()) text += e;
    await result.completed;
    expect(text).toBe("The tool said: sluice-marker-456");
    expect(result.finalOutput).toBe("The tool said: sluice-marker-456");

    const sent = probe.calls.slice(from).map((c) => c.body);
    expect(sent[0].stream).toBe(true);
    expect(sent[0].tools).toMatchObject([{ type: "namespace", name: "probe_tools", tools: [{ type: "function", name: "get_marker" }] }]);
    expect(sent[1].input.find((i: { type?: string }) => i.type === "function_call")).toMatchObject({ name: "get_marker", namespace: "probe_tools" });
  });
});
