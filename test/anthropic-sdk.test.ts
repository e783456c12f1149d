// The real Anthropic SDK against the real gateway (Claude's model names aliased to private models),
// in front of a scripted Chat Completions model server, over real sockets: create, stream, a tool
// round trip, countTokens, the SDK's typed errors, a stream cut mid-answer (billed), and its retries
// of a failing model server (each one counted by QPM; a spent budget not retried).
import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { countText } from "../src/tokens/counter.js";
import { CODER, DEV_KEY, PACED_KEY, THRIFTY_KEY, TINY_CONTEXT, countingFetch, startMessagesGateway, type ConfigChanges, type MessagesGateway } from "./support/messages-gateway.js";
import { reasoningChunks, textChunks, toolCallChunks, type ModelScript } from "./support/scripted-upstream.js";

let g: MessagesGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

async function start(script: ModelScript, changes?: ConfigChanges): Promise<MessagesGateway> {
  g = await startMessagesGateway(script, changes);
  return g;
}

function sdk(key = DEV_KEY, opts: ConstructorParameters<typeof Anthropic>[0] = {}): Anthropic {
  return new Anthropic({ baseURL: g!.url, apiKey: key, maxRetries: 0, ...opts });
}

const user = (content: string) => [{ role: "user" as const, content }];
const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion });
const apiError = (e: unknown) => e as InstanceType<typeof Anthropic.APIError>;

describe("Anthropic SDK through the gateway", () => {
  it("messages.create: a whole answer from the aliased model, billed with the upstream's tokens", async () => {
    await start(() => ({ chunks: textChunks("Whole answer."), finishReason: "stop", usage: usage(42, 5) }));
    const { fetch, sent } = countingFetch();
    // SDK 1.14's types no longer list top_k; the API still takes it
    const message = await sdk(DEV_KEY, { fetch }).messages.create({ model: "claude-haiku-4-5", max_tokens: 50, messages: user("hi"), ...{ top_k: 40 } });
    // what SDK 1.14 sends: no query, its own API version, the key as Authorization: Bearer (Claude
    // Code's embedded SDK sends x-api-key and 2023-06-01)
    expect(sent).toEqual([expect.objectContaining({ path: "/v1/messages", query: "", version: "2026-10-21", keyHeader: "authorization", retry: "0", status: 200 })]);
    expect(message.content).toEqual([{ type: "text", text: "Whole answer." }]);
    expect(message).toMatchObject({ model: "claude-haiku-4-5", stop_reason: "end_turn", usage: { input_tokens: 42, output_tokens: 5 } });
    // the channel got the private model's name, and top_k because the model lists it in passThrough
    expect(g!.upstream.requests[0]!.body).toMatchObject({ model: CODER, max_tokens: 50, top_k: 40, stream: false, messages: [{ role: "user", content: "hi" }] });
    expect(g!.rows).toEqual([expect.objectContaining({ appId: "coder", keyName: "dev", model: CODER, channel: "gpu", inputTokens: 42, outputTokens: 5, points: 0.052, status: 200, finishReason: "stop" })]);
    // the chat path's metrics, under the dialect's route label
    const metrics = await fetch(`${g!.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/sluice_requests_total\{[^}]*route="messages"[^}]*\} 1/);
  });

  it("messages.stream: thinking from the upstream's reasoning, then text, with the usage of the stream", async () => {
    await start(() => ({ chunks: [...reasoningChunks("Think first."), ...textChunks("Streamed answer, in pieces.", 5)], finishReason: "stop", usage: usage(30, 12) }));
    const stream = sdk().messages.stream({ model: "claude-sonnet-5", max_tokens: 50, messages: user("hi") });
    const pieces: string[] = [];
    stream.on("text", (t) => pieces.push(t));
    const message = await stream.finalMessage();
    expect(pieces.length).toBeGreaterThan(1);
    expect(message.content).toEqual([
      { type: "thinking", thinking: "Think first.", signature: "" },
      { type: "text", text: "Streamed answer, in pieces." },
    ]);
    expect(message.usage).toMatchObject({ input_tokens: 30, output_tokens: 12 });
    expect(g!.upstream.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(g!.rows).toEqual([expect.objectContaining({ inputTokens: 30, outputTokens: 12, status: 200, finishReason: "stop" })]);
  });

  it("goes round a tool loop: tool_use with the upstream's id, the tool_result reaching the model as a tool message", async () => {
    await start((req) => {
      const last = req.body.messages.at(-1)!;
      if (last.role === "tool") return { chunks: textChunks(`The weather: ${String(last.content)} (call ${String(last.tool_call_id)})`), finishReason: "stop", usage: usage(80, 9) };
      return { chunks: [...textChunks("Checking."), ...toolCallChunks(0, "call_w1", "get_weather", { city: "Oslo" })], finishReason: "tool_calls", usage: usage(60, 14) };
    });
    const client = sdk();
    const tools = [{ name: "get_weather", description: "Weather of a city", input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] } }];
    const first = await client.messages.stream({ model: "claude-sonnet-5", max_tokens: 100, tools, messages: user("Weather in Oslo?") }).finalMessage();
    expect(first.stop_reason).toBe("tool_use");
    const use = first.content.find((b) => b.type === "tool_use")!;
    expect(use).toEqual({ type: "tool_use", id: "toolu_call_w1", name: "get_weather", input: { city: "Oslo" } });
    expect(g!.upstream.requests[0]!.body.tools).toEqual([{ type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: tools[0]!.input_schema } }]);

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
    expect(g!.upstream.requests[1]!.body.messages.slice(1)).toEqual([
      { role: "assistant", content: "Checking.", tool_calls: [{ id: "call_w1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] },
      { role: "tool", tool_call_id: "call_w1", content: "-3°C, snow" },
    ]);
    expect(g!.rows.map((r) => [r.inputTokens, r.outputTokens, r.finishReason])).toEqual([
      [60, 14, "tool_calls"],
      [80, 9, "stop"],
    ]);
  });

  it("messages.countTokens counts with the model's tokenizer: no model call, no usage row", async () => {
    await start(() => ({ chunks: [], finishReason: "stop" }));
    const body = { model: "claude-sonnet-5", system: "Be brief.", messages: user("How many tokens is this?") };
    const counted = await sdk().messages.countTokens(body);
    // system and user message, each role + "\n" + text + 4
    expect(counted.input_tokens).toBe(countText("system\nBe brief.") + countText("user\nHow many tokens is this?") + 8);
    // as Claude Code calls it: ?beta=true, the key as x-api-key
    const beta = await fetch(`${g!.url}/v1/messages/count_tokens?beta=true`, { method: "POST", headers: { "x-api-key": DEV_KEY, "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(await beta.json()).toEqual({ input_tokens: counted.input_tokens });
    expect(g!.upstream.requests).toHaveLength(0);
    expect(g!.rows).toHaveLength(0);
  });

  it("raises the SDK's typed errors: wrong key, unknown model, QPM, a spent budget, a prompt over the context", async () => {
    await start(() => ({ chunks: textChunks("ok"), finishReason: "stop", usage: usage(30, 20) }));
    const body = { model: "claude-sonnet-5", max_tokens: 5, messages: user("hi") };
    const raised = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => apiError(e));

    const auth = await raised(sdk("sk-sluice-wrong-key-0001").messages.create(body));
    expect(auth).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(auth!.type).toBe("authentication_error");
    expect(auth!.headers?.get("x-should-retry")).toBe("false");

    const unknown = await raised(sdk().messages.create({ ...body, model: "gpt-4o" }));
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown!.type).toBe("not_found_error");

    const paced = sdk(PACED_KEY);
    await paced.messages.create(body);
    await paced.messages.create(body);
    const rate = await raised(paced.messages.create(body));
    expect(rate).toBeInstanceOf(Anthropic.RateLimitError);
    expect(rate!.type).toBe("rate_limit_error");
    expect(Number(rate!.headers?.get("retry-after"))).toBeGreaterThanOrEqual(1);

    // 30 input and 20 output tokens cost 0.07 points: the budget of 0.05 holds all it has for an
    // answer that may take 100 tokens and is spent after it (a budget spends at most what it held),
    // and the refusal tells the SDK not to retry (it retries every other 429)
    const { fetch, sent } = countingFetch();
    const thrifty = sdk(THRIFTY_KEY, { maxRetries: 2, fetch });
    await thrifty.messages.create({ ...body, max_tokens: 100 });
    const spent = await raised(thrifty.messages.create({ ...body, max_tokens: 100 }));
    expect(spent).toBeInstanceOf(Anthropic.RateLimitError);
    expect(spent!.type).toBe("rate_limit_error");
    expect(spent!.message).toContain("not enough of its points budget left");
    expect(spent!.headers?.get("x-should-retry")).toBe("false");
    expect(sent.map((s) => s.status)).toEqual([200, 429]);

    const tooLong = { model: "claude-tiny", max_tokens: 100, system: "You are terse.", messages: user("word ".repeat(3000)) };
    const { input_tokens } = await sdk().messages.countTokens(tooLong);
    const refused = await raised(sdk().messages.create(tooLong));
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refused!.type).toBe("invalid_request_error");
    // the count_tokens of the same body, and the most a prompt may take (one token left to answer)
    expect(refused!.error).toMatchObject({ error: { message: `prompt is too long: ${input_tokens} tokens > ${TINY_CONTEXT - 1} maximum` } });
    expect(input_tokens).toBeGreaterThan(TINY_CONTEXT);
    // refused before any channel was called: the model server saw 2 + 1 answered requests
    expect(g!.upstream.requests).toHaveLength(3);
  });

  it("raises when the stream is cut after its first byte, and bills what was generated", async () => {
    // the model server dies after 2 of its 4 text chunks, before any usage
    await start(() => ({ chunks: textChunks("This will not finish", 4), finishReason: "stop", usage: usage(25, 9), cutAfter: 2, chunkDelayMs: 20 }));
    const stream = sdk().messages.stream({ model: "claude-sonnet-5", max_tokens: 50, messages: user("hi") });
    const seen: string[] = [];
    stream.on("text", (t) => seen.push(t));
    const err = apiError(await stream.finalMessage().catch((e: unknown) => e));
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.type).toBe("api_error");
    expect(err.message).toContain("ended the answer before it was complete");
    // what reached the client before the cut (the last chunk may die with the connection) is what is billed
    const relayed = seen.join("");
    expect(relayed.length).toBeGreaterThan(0);
    expect("This will ".startsWith(relayed)).toBe(true);
    // the prompt counted by the gateway (one user message: "user\nhi" + 4) and the partial output
    expect(g!.rows).toEqual([
      expect.objectContaining({ inputTokens: countText("user\nhi") + 4, outputTokens: countText(relayed), status: 502, finishReason: "upstream_error" }),
    ]);
    expect(g!.rows[0]!.points).toBeGreaterThan(0);
  });
});

describe("Anthropic SDK retries through the gateway", () => {
  it("retries a failing model server, then an overloaded_error after its Retry-After, and gets the answer", async () => {
    // the model server fails once; one failure opens its breaker for a second
    await start((_req, n) => (n === 0 ? { chunks: [], finishReason: "stop", status: 503 } : { chunks: textChunks("finally"), finishReason: "stop", usage: usage(9, 2) }), {
      extra: { routing: { breaker: { failures: 1, cooldownMs: 1000 } } },
    });
    const { fetch, sent } = countingFetch();
    const message = await sdk(DEV_KEY, { maxRetries: 2, fetch }).messages.create({ model: "claude-sonnet-5", max_tokens: 5, messages: user("hi") });
    expect(message.content).toEqual([{ type: "text", text: "finally" }]);
    // 502 api_error for the model server's 503; then the open breaker's 503 overloaded_error
    // (Retry-After: 1), answered without calling the model server; then the answer
    expect(sent.map((s) => [s.retry, s.status])).toEqual([
      ["0", 502],
      ["1", 503],
      ["2", 200],
    ]);
    expect(sent[2]!.at - sent[1]!.at).toBeGreaterThanOrEqual(950);
    expect(g!.upstream.requests).toHaveLength(2);
    expect(g!.rows.map((r) => [r.status, r.inputTokens, r.outputTokens])).toEqual([
      [502, 0, 0],
      [200, 9, 2],
    ]);
  });

  it("counts every retry against the key's QPM: no retry storm reaches the model server", async () => {
    await start(() => ({ chunks: [], finishReason: "stop", status: 503 }));
    const { fetch, sent } = countingFetch();
    const err = apiError(await sdk(PACED_KEY, { maxRetries: 2, fetch }).messages.create({ model: "claude-sonnet-5", max_tokens: 5, messages: user("hi") }).catch((e: unknown) => e));
    // two requests a minute: the SDK's second retry is refused by QPM, the model server not called
    expect(sent.map((s) => [s.retry, s.status])).toEqual([
      ["0", 502],
      ["1", 502],
      ["2", 429],
    ]);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    expect(g!.upstream.requests).toHaveLength(2);
  });
});
