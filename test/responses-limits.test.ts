// The chat limits and the store's byte bound on /v1/responses, through the real gateway and the
// openai SDK (docs/codex.md#errors-and-how-the-clients-react): a prompt over maxContext is a 400
// context_length_exceeded (never trimmed: an agent's history is whole or refused), maxResponse lowers
// max_output_tokens, and a kept conversation is bounded by the body limit in bytes.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APP_KEY, MODEL, startResponsesGateway, type ResponsesGateway } from "./support/responses-gateway.js";
import { textChunks } from "./support/scripted-upstream.js";

const BODY_LIMIT = 4096;
const ok = () => ({ chunks: textChunks("ok"), finishReason: "stop", usage: { prompt_tokens: 5, completion_tokens: 1 } });

/** A gateway for the tests of one describe block, and the openai SDK on it. */
function useGateway(opts: Parameters<typeof startResponsesGateway>[0]): { h: ResponsesGateway; client: OpenAI } {
  const made = {} as { h: ResponsesGateway; client: OpenAI };
  beforeAll(async () => {
    made.h = await startResponsesGateway(opts);
    made.h.play(ok);
    made.client = new OpenAI({ apiKey: APP_KEY, baseURL: made.h.baseURL, maxRetries: 0 });
  });
  afterAll(() => made.h.close());
  return made;
}

describe("limits on /v1/responses", () => {
  const g = useGateway({ model: { maxContext: 300, maxResponse: 50 } });
  it("refuses a prompt over maxContext with 400 context_length_exceeded, whole or streamed, calling no model", async () => {
    const calls = g.h.upstream.requests.length;
    const long = "word ".repeat(400);
    for (const stream of [false, true]) {
      await expect(g.client.responses.create({ model: MODEL, input: long, stream })).rejects.toMatchObject({
        constructor: OpenAI.BadRequestError,
        code: "context_length_exceeded",
      });
    }
    // a history over the limit is not trimmed to fit either: the oldest turn would lose its tool call
    const history: OpenAI.Responses.ResponseInput = [
      { role: "user", content: long },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "done" },
      { role: "user", content: "and now?" },
    ];
    await expect(g.client.responses.create({ model: MODEL, input: history })).rejects.toMatchObject({ status: 400, code: "context_length_exceeded" });
    expect(g.h.upstream.requests.length).toBe(calls);
  });

  it("lowers max_output_tokens to the model's maxResponse", async () => {
    await g.client.responses.create({ model: MODEL, input: "hi", max_output_tokens: 10_000 });
    expect(g.h.upstream.requests.at(-1)!.body.max_tokens).toBe(50);
  });
});

describe("the stored conversation's byte bound", () => {
  const g = useGateway({ extra: { server: { bodyLimitBytes: BODY_LIMIT }, responses: { maxBytes: BODY_LIMIT } } });
  it("keeps a conversation up to responses.maxBytes in bytes, counting a CJK character as its three bytes", async () => {
    // 1,000 characters, 3,000 bytes: kept; with 300 more (900 bytes) the conversation passes 4,096 bytes
    // while its UTF-16 length (about 1,900) stays far below
    const first = await g.client.responses.create({ model: MODEL, input: "汉".repeat(1000) });
    expect((await g.client.responses.retrieve(first.id)).id).toBe(first.id);
    const second = await g.client.responses.create({ model: MODEL, input: "字".repeat(300), previous_response_id: first.id });
    expect(second.output_text).toBe("ok");
    expect(g.h.upstream.requests.at(-1)!.body.messages).toHaveLength(3);
    await expect(g.client.responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(g.client.responses.create({ model: MODEL, input: "x", previous_response_id: second.id })).rejects.toMatchObject({ code: "previous_response_not_found" });
  });
});
