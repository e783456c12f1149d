// The built-in demo channel: answers locally by echoing the last user message, streaming too, so a
// fresh install answers its first request with no model server running. It reports no usage, so the
// gateway's own token counting is what a demo shows.
import { Readable } from "node:stream";
import type { ChannelConfig } from "../config/schema.js";
import { lastUserText } from "../tokens/counter.js";
import type { ChatMessage } from "../chat/request-schema.js";
import type { ChannelClient, UpstreamAnswer, UpstreamRequest } from "./types.js";

function echoText(messages: ChatMessage[]): string {
  const said = lastUserText(messages);
  return said ? `Echo: ${said}` : "Echo: (no user message)";
}

export function createEchoChannel(channel: ChannelConfig): ChannelClient {
  async function send(req: UpstreamRequest): Promise<UpstreamAnswer> {
    const model = String(req.body.model);
    const text = echoText(req.body.messages as ChatMessage[]);
    const id = `chatcmpl-echo-${Date.now().toString(36)}`;
    const created = Math.floor(Date.now() / 1000);
    if (!req.stream) {
      return {
        kind: "json",
        completion: {
          id,
          object: "chat.completion",
          created,
          model,
          choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
        },
      };
    }
    const events = [...echoChunks(id, created, model, text), "[DONE]"];
    return { kind: "stream", body: Readable.from(events.map((e) => Buffer.from(`data: ${e}\n\n`))), maxBytes: Number.POSITIVE_INFINITY };
  }
  return { name: channel.name, send, close: async () => {} };
}

function* echoChunks(id: string, created: number, model: string, text: string): Generator<string> {
  const chunk = (delta: Record<string, string>, finish: string | null) =>
    JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }] });
  yield chunk({ role: "assistant", content: "" }, null);
  for (const piece of text.match(/\S+\s*/g) ?? [text]) yield chunk({ content: piece }, null);
  yield chunk({}, "stop");
}
