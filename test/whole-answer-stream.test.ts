// A model server that answers a stream request with one chat.completion, as some do: the gateway
// streams that answer to the client whole — its text, its reasoning and its tool calls — for chat
// and for the dialects alike (src/chat/respond-stream.ts, completionAsSse). Before, only the text
// went out: an agent was told stop_reason "tool_use" with no tool_use block.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatChunk } from "../src/chat/dialect.js";
import { APP_KEY, MODEL, startResponsesGateway, type ResponsesGateway } from "./support/responses-gateway.js";
import { parseSse } from "./support/sse.js";

let h: ResponsesGateway;
beforeAll(async () => {
  h = await startResponsesGateway();
  const chunks: ChatChunk[] = [
    { choices: [{ index: 0, delta: { reasoning_content: "list the files" } }] },
    { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "Bash", arguments: '{"command":"ls"}' } }] } }] },
  ];
  h.play(() => ({ chunks, finishReason: "tool_calls", answerWhole: true, usage: { prompt_tokens: 9, completion_tokens: 6 } }));
});
afterAll(() => h.close());

const stream = async (path: string, body: Record<string, unknown>) => {
  const res = await fetch(`${h.gw.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${APP_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, stream: true, ...body }),
  });
  expect(res.status).toBe(200);
  return parseSse(await res.text());
};

describe("a stream request answered whole by the model server", () => {
  it("reaches a chat client with its reasoning and tool calls", async () => {
    const frames = (await stream("/v1/chat/completions", { messages: [{ role: "user", content: "ls" }] })).filter((f) => f.data !== "[DONE]");
    const deltas = frames.map((f) => JSON.parse(f.data).choices?.[0]?.delta).filter(Boolean);
    expect(deltas[0]).toMatchObject({ role: "assistant", reasoning_content: "list the files", tool_calls: [{ index: 0, id: "call_1", function: { name: "Bash", arguments: '{"command":"ls"}' } }] });
  });

  it("reaches an Anthropic client as a thinking block and a tool_use block", async () => {
    const events = await stream("/v1/messages", { max_tokens: 100, messages: [{ role: "user", content: "ls" }] });
    const blocks = events.filter((e) => e.event === "content_block_start").map((e) => JSON.parse(e.data).content_block);
    expect(blocks.map((b) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(blocks[1]).toMatchObject({ name: "Bash", id: expect.stringContaining("call_1") });
    const json = events.filter((e) => e.event === "content_block_delta").map((e) => JSON.parse(e.data).delta).filter((d) => d.type === "input_json_delta").map((d) => d.partial_json).join("");
    expect(JSON.parse(json)).toEqual({ command: "ls" });
    const stop = events.find((e) => e.event === "message_delta");
    expect(JSON.parse(stop!.data).delta.stop_reason).toBe("tool_use");
  });
});
