// The built-in demo channel: answers locally by echoing the last user message, streaming too, and
// embeds each input as a vector hashed from it, so a fresh install answers its first request with no
// model server running. It reports no usage, so the gateway's own token counting is what a demo shows.
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { ChannelConfig } from "../config/schema.js";
import { lastUserText } from "../tokens/counter.js";
import type { ChatMessage } from "../chat/request-schema.js";
import { inputItems, type EmbeddingInput } from "../embeddings/request-schema.js";
import { scanEmbeddings, type EmbeddingsAnswer } from "../embeddings/answer.js";
import type { ChannelClient, EmbeddingsCall, UpstreamAnswer, UpstreamRequest } from "./types.js";

/** Vector length when the request gives no `dimensions`. */
export const ECHO_DIMENSIONS = 256;

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
  async function embed(req: EmbeddingsCall): Promise<EmbeddingsAnswer> {
    const dimensions = typeof req.body.dimensions === "number" ? req.body.dimensions : ECHO_DIMENSIONS;
    const base64 = req.body.encoding_format === "base64";
    const data = inputItems(req.body.input as EmbeddingInput).map((item, index) => {
      const vector = hashedVector(item, dimensions);
      return { object: "embedding", index, embedding: base64 ? float32Base64(vector) : vector };
    });
    // in the shape an upstream's answer arrives in, so that it goes out the same way
    return scanEmbeddings(Buffer.from(JSON.stringify({ object: "list", data, model: String(req.body.model) })), data.length)!;
  }
  return { name: channel.name, send, embed, close: async () => {} };
}

/** A unit vector that depends only on the input: the same input always embeds the same. */
function hashedVector(item: string | number[], dimensions: number): number[] {
  const seed = JSON.stringify(item);
  const vector: number[] = [];
  for (let block = 0; vector.length < dimensions; block++) {
    const digest = createHash("sha256").update(`${block}:${seed}`).digest();
    for (let at = 0; at + 4 <= digest.length && vector.length < dimensions; at += 4) vector.push(digest.readUInt32LE(at) / 0x80000000 - 1);
  }
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0)) || 1;
  return vector.map((v) => v / norm);
}

/** OpenAI's `encoding_format: "base64"`: the float32 values, little-endian, in base64. */
export function float32Base64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString("base64");
}

function* echoChunks(id: string, created: number, model: string, text: string): Generator<string> {
  const chunk = (delta: Record<string, string>, finish: string | null) =>
    JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }] });
  yield chunk({ role: "assistant", content: "" }, null);
  for (const piece of text.match(/\S+\s*/g) ?? [text]) yield chunk({ content: piece }, null);
  yield chunk({}, "stop");
}
