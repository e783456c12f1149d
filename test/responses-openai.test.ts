// The real openai SDK (v6) against the gateway's /v1/responses over real sockets, the gateway in
// front of a private model that speaks only Chat Completions (test/support/responses-gateway.ts):
// whole and streamed answers, a function-call round trip, previous_response_id, retrieve and delete
// for the same app only, typed errors, a stream cut mid-answer, and what each writes in the usage rows.
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseSse } from "./support/sse.js";
import { APP_KEY, MODEL, OTHER_KEY, startResponsesGateway, type ResponsesGateway } from "./support/responses-gateway.js";
import { reasoningChunks, textChunks, toolCallChunks, type ModelTurn, type ScriptedRequest } from "./support/scripted-upstream.js";

type Message = { role: string; content?: unknown; tool_call_id?: string };
const messagesOf = (req: ScriptedRequest) => req.body.messages as Message[];
const lastUser = (req: ScriptedRequest) => String(messagesOf(req).findLast((m) => m.role === "user")?.content ?? "");
const usage = { prompt_tokens: 31, completion_tokens: 9 };

/** The private model: its answer picked by what the last message asks for. */
function model(req: ScriptedRequest): ModelTurn {
  const last = messagesOf(req).at(-1)!;
  if (last.role === "tool") return { chunks: textChunks(`The tool said: ${String(last.content)}`), finishReason: "stop", usage };
  const ask = lastUser(req);
  if (ask.includes("weather")) return { chunks: toolCallChunks(0, "call_w1", "get_weather", { city: "Paris" }), finishReason: "tool_calls", usage };
  if (ask.includes("think")) {
    const thought = { ...usage, completion_tokens_details: { reasoning_tokens: 4 } };
    return { chunks: [...reasoningChunks("Six times seven."), ...textChunks("42")], finishReason: "stop", usage: thought };
  }
  // paced, so what was written before the cut leaves the model server before its socket is destroyed
  if (ask.includes("cached")) return { chunks: textChunks("From the cache."), finishReason: "stop", usage: { ...usage, prompt_tokens_details: { cached_tokens: 24 } } };
  if (ask.includes("ramble")) return { chunks: textChunks("On and on and"), finishReason: "length", usage };
  if (ask.includes("cut")) return { chunks: textChunks("This answer is cut off here", 6), finishReason: "stop", cutAfter: 3, chunkDelayMs: 10 };
  if (ask.includes("name")) {
    const said = messagesOf(req).filter((m) => m.role === "user").map((m) => m.content);
    return { chunks: textChunks(`You said: ${JSON.stringify(said)}`), finishReason: "stop", usage };
  }
  return { chunks: textChunks("Hello from the private model."), finishReason: "stop", usage };
}

let h: ResponsesGateway;
let client: OpenAI;
beforeAll(async () => {
  h = await startResponsesGateway();
  client = new OpenAI({ apiKey: APP_KEY, baseURL: h.baseURL, maxRetries: 0 });
});
afterAll(() => h.close());
beforeEach(() => h.play(model));

const post = (body: unknown, key = APP_KEY) =>
  fetch(`${h.baseURL}/responses`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: JSON.stringify(body) });

describe("openai SDK: responses.create", () => {
  it("answers whole: output_text, the name asked for, the upstream's usage in the answer and the usage row", async () => {
    const rows = h.usage.rows.length;
    const r = await client.responses.create({ model: "gpt-5-mini", input: "hi", instructions: "Be brief.", max_output_tokens: 100 });
    expect(r.output_text).toBe("Hello from the private model.");
    expect(r).toMatchObject({ object: "response", status: "completed", model: "gpt-5-mini" });
    expect(r.usage).toEqual({ input_tokens: 31, input_tokens_details: { cached_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 40 });

    const sent = h.upstream.requests.at(-1)!;
    expect(sent.body).toMatchObject({ model: MODEL, stream: false, max_tokens: 100, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }] });
    expect(await h.usage.row(rows)).toMatchObject({ appId: "coder", keyName: "coder-key", model: MODEL, channel: "vllm", inputTokens: 31, outputTokens: 9, status: 200, finishReason: "stop" });
  });

  it("gives upstream reasoning as a reasoning item, and its reasoning_tokens in usage, whole and streamed", async () => {
    const whole = await client.responses.create({ model: MODEL, input: "think: 6 x 7?" });
    expect(whole.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect(whole.output[0]).toMatchObject({ summary: [{ type: "summary_text", text: "Six times seven." }] });
    expect(whole.output_text).toBe("42");
    expect(whole.usage?.output_tokens_details).toEqual({ reasoning_tokens: 4 });

    const streamed = await client.responses.stream({ model: MODEL, input: "think again" }).finalResponse();
    expect(streamed.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect(streamed.usage).toMatchObject({ input_tokens: 31, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 4 } });
  });

  it("passes the upstream's cached prompt tokens as cached_tokens, whole and streamed; 0 when it reports none", async () => {
    const whole = await client.responses.create({ model: MODEL, input: "cached?" });
    expect(whole.usage?.input_tokens_details).toEqual({ cached_tokens: 24 });
    const streamed = await client.responses.stream({ model: MODEL, input: "cached again?" }).finalResponse();
    expect(streamed.usage).toMatchObject({ input_tokens: 31, input_tokens_details: { cached_tokens: 24 } });
    h.play(() => ({ chunks: textChunks("odd"), finishReason: "stop", usage: { ...usage, prompt_tokens_details: { cached_tokens: "24" as never } } }));
    expect((await client.responses.create({ model: MODEL, input: "hi" })).usage?.input_tokens_details).toEqual({ cached_tokens: 0 });
  });

  it("answers an upstream cut by its token limit as incomplete (max_output_tokens), whole and streamed", async () => {
    const whole = await client.responses.create({ model: MODEL, input: "ramble", max_output_tokens: 5 });
    expect(whole).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output_text: "On and on and" });
    const events: string[] = [];
    const stream = client.responses.stream({ model: MODEL, input: "ramble", max_output_tokens: 5 });
    stream.on("event", (e) => events.push(e.type));
    const streamed = await stream.finalResponse();
    expect(events.at(-1)).toBe("response.incomplete");
    expect(streamed).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
  });
});

describe("openai SDK: streams", () => {
  it("streams with responses.stream: text deltas, then the final response; no [DONE] on the wire", async () => {
    const stream = client.responses.stream({ model: "gpt-5", input: "hi" });
    let deltas = "";
    stream.on("response.output_text.delta", (e) => (deltas += e.delta));
    const final = await stream.finalResponse();
    expect(deltas).toBe("Hello from the private model.");
    expect(final).toMatchObject({ status: "completed", model: "gpt-5", output_text: "Hello from the private model." });
    expect(final.usage).toMatchObject({ input_tokens: 31, output_tokens: 9, total_tokens: 40 });
    expect(h.upstream.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });

    const raw = await (await post({ model: MODEL, input: "hi", stream: true })).text();
    const frames = parseSse(raw);
    expect(frames.at(-1)!.event).toBe("response.completed");
    expect(frames.every((f) => f.data !== "[DONE]")).toBe(true);
    expect(raw).not.toContain("[DONE]");
    expect(frames.map((f) => JSON.parse(f.data).sequence_number)).toEqual(frames.map((_, i) => i));
  });

  it("streams with stream: true, the SDK iterating its typed events", async () => {
    const events = await client.responses.create({ model: MODEL, input: "hi", stream: true });
    const types: string[] = [];
    for await (const e of events) types.push(e.type);
    expect(types[0]).toBe("response.created");
    expect(types).toContain("response.output_text.delta");
    expect(types.at(-1)).toBe("response.completed");
  });

  it("runs a function-call round trip by stream, continuing with previous_response_id", async () => {
    const tools: OpenAI.Responses.Tool[] = [
      { type: "function", name: "get_weather", strict: true, parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false } },
    ];
    const events: string[] = [];
    const first = client.responses.stream({ model: MODEL, input: "weather in Paris?", tools });
    first.on("event", (e) => events.push(e.type));
    const r1 = await first.finalResponse();
    const call = r1.output.find((o) => o.type === "function_call")!;
    expect(call).toMatchObject({ type: "function_call", call_id: "call_w1", name: "get_weather", arguments: '{"city":"Paris"}' });
    expect(events.filter((e) => e === "response.function_call_arguments.delta")).toHaveLength(2);
    expect(h.upstream.requests.at(-1)!.body.tools).toEqual([{ type: "function", function: { name: "get_weather", parameters: expect.any(Object), strict: true } }]);

    const r2 = await client.responses.create({
      model: MODEL,
      previous_response_id: r1.id,
      input: [{ type: "function_call_output", call_id: "call_w1", output: "18°C, sunny" }],
      tools,
    });
    expect(r2.output_text).toBe("The tool said: 18°C, sunny");
    expect(messagesOf(h.upstream.requests.at(-1)!)).toMatchObject([
      { role: "user", content: "weather in Paris?" },
      { role: "assistant", tool_calls: [{ id: "call_w1", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: "call_w1", content: "18°C, sunny" },
    ]);
  });
});

describe("openai SDK: stored responses", () => {
  it("keeps a conversation across previous_response_id, retrieves it, deletes it", async () => {
    const r1 = await client.responses.create({ model: MODEL, input: "my name is Ada" });
    const r2 = await client.responses.create({ model: MODEL, input: "what is my name?", previous_response_id: r1.id });
    expect(r2.output_text).toBe('You said: ["my name is Ada","what is my name?"]');
    expect(r2.previous_response_id).toBe(r1.id);

    const got = await client.responses.retrieve(r2.id);
    expect(got).toMatchObject({ id: r2.id, status: "completed", output_text: r2.output_text, usage: r2.usage });
    expect(await client.responses.delete(r2.id)).toEqual({ id: r2.id, object: "response.deleted", deleted: true });
    await expect(client.responses.retrieve(r2.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.responses.create({ model: MODEL, input: "x", previous_response_id: r2.id })).rejects.toMatchObject({
      status: 400,
      code: "previous_response_not_found",
      param: "previous_response_id",
    });
  });

  it("keeps a streamed response too, as the client saw it", async () => {
    const r = await client.responses.stream({ model: MODEL, input: "my name is Grace" }).finalResponse();
    const got = await client.responses.retrieve(r.id);
    expect(got).toMatchObject({ id: r.id, status: "completed", output_text: r.output_text, usage: r.usage });
    const next = await client.responses.create({ model: MODEL, input: "my name?", previous_response_id: r.id });
    expect(next.output_text).toBe('You said: ["my name is Grace","my name?"]');
  });

  it("shows another app's key nothing: 404 to retrieve, delete and continue", async () => {
    const mine = await client.responses.create({ model: MODEL, input: "hi" });
    const other = new OpenAI({ apiKey: OTHER_KEY, baseURL: h.baseURL, maxRetries: 0 });
    await expect(other.responses.retrieve(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.delete(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.create({ model: MODEL, input: "x", previous_response_id: mine.id })).rejects.toMatchObject({ status: 400, code: "previous_response_not_found" });
    expect((await client.responses.retrieve(mine.id)).id).toBe(mine.id);
    const anonymous = new OpenAI({ apiKey: "sk-not-a-key-at-all", baseURL: h.baseURL, maxRetries: 0 });
    await expect(anonymous.responses.retrieve(mine.id)).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("serves the same under /api/v1, and answers 401 to a GET or DELETE without a key", async () => {
    const api = new OpenAI({ apiKey: APP_KEY, baseURL: `${h.gw.url}/api/v1`, maxRetries: 0 });
    const r = await api.responses.create({ model: MODEL, input: "hi" });
    expect((await api.responses.retrieve(r.id)).output_text).toBe(r.output_text);
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${h.baseURL}/responses/${r.id}`, { method });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ error: { code: "missing_api_key" } });
    }
    expect((await client.responses.retrieve(r.id)).id).toBe(r.id);
  });

  it("keeps nothing with store: false", async () => {
    const r = await client.responses.create({ model: MODEL, input: "hi", store: false });
    expect(await h.gw.store.getResponse("coder", r.id, Date.now())).toBeUndefined();
    await expect(client.responses.retrieve(r.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe("openai SDK: errors", () => {
  it("surfaces the gateway's errors as typed APIErrors with code and param", async () => {
    await expect(client.responses.create({ model: MODEL, input: [{ type: "function_call", name: "f", arguments: "{}" } as never] })).rejects.toMatchObject({
      constructor: OpenAI.BadRequestError,
      code: "invalid_request",
      param: "input[0].call_id",
    });
    const wrongKey = new OpenAI({ apiKey: "sk-wrong-key-0000", baseURL: h.baseURL, maxRetries: 0 });
    await expect(wrongKey.responses.create({ model: MODEL, input: "hi" })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(client.responses.create({ model: "llama-unknown", input: "hi" })).rejects.toMatchObject({ status: 404, code: "model_not_found" });
  });

  it("answers an upstream failure before the first byte with the gateway's error, and writes a row for it", async () => {
    h.play(() => ({ chunks: [], finishReason: "stop", status: 500 }));
    const rows = h.usage.rows.length;
    const err = await client.responses.create({ model: MODEL, input: "hi" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBeGreaterThanOrEqual(500);
    expect(await h.usage.row(rows)).toMatchObject({ inputTokens: 0, outputTokens: 0, points: 0 });
  });
});

describe("openai SDK: a stream cut after the first byte", () => {
  it("ends with response.failed and error, never response.completed; the usage row bills the partial output", async () => {
    const rows = h.usage.rows.length;
    const stream = client.responses.stream({ model: MODEL, input: "cut me" });
    const seen: string[] = [];
    let deltas = "";
    stream.on("event", (e) => seen.push(e.type));
    stream.on("response.output_text.delta", (e) => (deltas += e.delta));
    await expect(stream.finalResponse()).rejects.toThrow("ended the answer before it was complete");
    expect(deltas).toBe("This answe");
    expect(seen.slice(-2)).toEqual(["response.failed", "error"]);
    expect(seen).not.toContain("response.completed");

    // no usage came before the cut: the gateway counts what was generated
    const row = await h.usage.row(rows);
    expect(row).toMatchObject({ status: 502, finishReason: "upstream_error", outputTokens: 3 });
    expect(row.points).toBe((row.inputTokens * 1 + 3 * 2) / 1000);
  });
});
