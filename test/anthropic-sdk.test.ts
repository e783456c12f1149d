// The real Anthropic SDK against the dialect's translations on a real socket (the dialect test
// server stands in for the pipeline): create, stream, a tool round trip, countTokens, its typed
// errors, a stream cut mid-answer, and its retries of an overloaded server.
import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { countInputTokens, toCountChat } from "../src/dialects/anthropic/count-tokens.js";
import { GatewayError } from "../src/http/errors.js";
import { channelBusy, streamCut, upstreamStatus } from "../src/upstream/errors.js";
import { startDialectServer, textChunks, toolCallChunks, type DialectServer, type ModelScript } from "./support/anthropic-dialect-server.js";

let server: DialectServer | undefined;
afterEach(() => server?.close());

async function sdk(script: ModelScript, maxRetries = 0): Promise<Anthropic> {
  server = await startDialectServer(script);
  return new Anthropic({ baseURL: server.url, apiKey: "sk-sluice-test", maxRetries });
}

const user = (content: string) => [{ role: "user" as const, content }];

describe("Anthropic SDK against the dialect", () => {
  it("messages.create gets a whole answer", async () => {
    const client = await sdk(() => ({ chunks: textChunks("Whole answer."), finishReason: "stop", usage: { input: 9, output: 3 } }));
    const message = await client.messages.create({ model: "claude-haiku-4-5", max_tokens: 50, messages: user("hi") });
    expect(message.content).toEqual([{ type: "text", text: "Whole answer." }]);
    expect(message).toMatchObject({ model: "claude-haiku-4-5", stop_reason: "end_turn", usage: { input_tokens: 9, output_tokens: 3 } });
    expect(server!.calls[0]!.chat).toMatchObject({ model: "claude-haiku-4-5", max_tokens: 50, stream: false });
    // what SDK 1.14 sends: no ?beta=true, its own API version, the key as Authorization: Bearer
    // (older SDKs, and the one inside Claude Code, send x-api-key and anthropic-version 2023-06-01)
    const [req] = server!.requests;
    expect([req!.path, req!.query]).toEqual(["/v1/messages", ""]);
    expect(req!.headers).toMatchObject({ "anthropic-version": "2026-10-21", authorization: "<redacted>", "x-stainless-retry-count": "0" });
    expect(req!.headers).not.toHaveProperty("x-api-key");
  });

  it("messages.stream gets text events and the final message", async () => {
    const client = await sdk(() => ({ chunks: textChunks("Streamed answer, in pieces.", 5), finishReason: "stop" }));
    const stream = client.messages.stream({ model: "claude-sonnet-5", max_tokens: 50, messages: user("hi") });
    const pieces: string[] = [];
    stream.on("text", (t) => pieces.push(t));
    const message = await stream.finalMessage();
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe("Streamed answer, in pieces.");
    expect(message.content).toEqual([{ type: "text", text: "Streamed answer, in pieces." }]);
  });

  it("goes round a tool loop: tool_use with the upstream's id, the tool_result reaching the model as a tool message", async () => {
    const client = await sdk((chat) => {
      const last = chat.messages.at(-1)!;
      if (last.role === "tool") return { chunks: textChunks(`The weather: ${String(last.content)} (call ${String(last.tool_call_id)})`), finishReason: "stop" };
      return { chunks: [...textChunks("Checking."), ...toolCallChunks(0, "call_w1", "get_weather", { city: "Oslo" })], finishReason: "tool_calls" };
    });
    const tools = [{ name: "get_weather", description: "Weather of a city", input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] } }];
    const first = await client.messages.stream({ model: "claude-sonnet-5", max_tokens: 100, tools, messages: user("Weather in Oslo?") }).finalMessage();
    expect(first.stop_reason).toBe("tool_use");
    const use = first.content.find((b) => b.type === "tool_use")!;
    expect(use).toEqual({ type: "tool_use", id: "toolu_call_w1", name: "get_weather", input: { city: "Oslo" } });
    expect(server!.calls[0]!.chat.tools).toEqual([{ type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: tools[0]!.input_schema } }]);

    const second = await client.messages.create({
      model: "claude-sonnet-5",
      max_tokens: 100,
      tools,
      messages: [
        { role: "user", content: "Weather in Oslo?" },
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "-3°C, snow" }] },
      ],
    });
    expect(second.content).toEqual([{ type: "text", text: "The weather: -3°C, snow (call call_w1)" }]);
  });

  it("messages.countTokens counts with the tokenizer and calls no model", async () => {
    let modelCalls = 0;
    const client = await sdk(() => {
      modelCalls++;
      return { chunks: [], finishReason: "stop" };
    });
    const body = { model: "claude-sonnet-5", system: "Be brief.", messages: user("How many tokens is this?") };
    const counted = await client.messages.countTokens(body);
    expect(counted.input_tokens).toBe(await countInputTokens(toCountChat(body).chat, "cl100k_base"));
    expect(counted.input_tokens).toBeGreaterThan(5);
    expect(modelCalls).toBe(0);
    expect(server!.requests.map((r) => r.path)).toEqual(["/v1/messages/count_tokens"]);
  });

  it("raises the SDK's typed errors", async () => {
    const errors: GatewayError[] = [
      new GatewayError(401, "invalid_api_key", "Invalid API key."),
      new GatewayError(404, "model_not_found", "The model does not exist."),
      upstreamStatus("qwen3-coder", 429, undefined, "3"),
      Object.assign(new GatewayError(400, "context_length_exceeded", "too long"), { promptTokens: 250000, maxContext: 200000 }),
      new GatewayError(403, "app_key_required", "Use an application key."),
    ];
    const client = await sdk((_chat, n) => {
      throw errors[n]!;
    });
    const raised = [];
    for (let i = 0; i < errors.length; i++) raised.push(await client.messages.create({ model: "m", max_tokens: 5, messages: user("hi") }).catch((e: unknown) => e));
    expect(raised[0]).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(raised[1]).toBeInstanceOf(Anthropic.NotFoundError);
    expect(raised[2]).toBeInstanceOf(Anthropic.RateLimitError);
    expect((raised[2] as InstanceType<typeof Anthropic.RateLimitError>).headers.get("retry-after")).toBe("3");
    expect(raised[3]).toBeInstanceOf(Anthropic.BadRequestError);
    expect((raised[3] as Error).message).toContain("prompt is too long: 250000 tokens > 200000 maximum");
    expect(raised[4]).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((raised[0] as InstanceType<typeof Anthropic.APIError>).type).toBe("authentication_error");
  });

  it("raises when the stream is cut after its first byte", async () => {
    const client = await sdk(() => ({ chunks: textChunks("This will not finish", 4), finishReason: "stop", failAfter: { chunks: 2, error: streamCut("qwen3-coder") } }));
    const stream = client.messages.stream({ model: "m", max_tokens: 50, messages: user("hi") });
    const seen: string[] = [];
    stream.on("text", (t) => seen.push(t));
    const err = await stream.finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).type).toBe("api_error");
    expect(seen.join("")).toBe("This will ");
  });

  it("retries an overloaded 503 as often as its maxRetries says, honouring Retry-After", async () => {
    const client = await sdk((_chat, n) => {
      if (n !== 2) throw channelBusy("qwen3-coder");
      return { chunks: textChunks("finally"), finishReason: "stop" };
    }, 2);
    const started = performance.now();
    const message = await client.messages.create({ model: "m", max_tokens: 5, messages: user("hi") });
    expect(message.content).toEqual([{ type: "text", text: "finally" }]);
    expect(server!.requests.map((r) => r.headers["x-stainless-retry-count"])).toEqual(["0", "1", "2"]);
    // Retry-After: 1 on each refusal
    expect(performance.now() - started).toBeGreaterThanOrEqual(1900);

    const refused = await client.messages.create({ model: "m", max_tokens: 5, messages: user("hi") }, { maxRetries: 0 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.InternalServerError);
    expect((refused as InstanceType<typeof Anthropic.APIError>).type).toBe("overloaded_error");
    expect(server!.requests).toHaveLength(4);
  });
});
