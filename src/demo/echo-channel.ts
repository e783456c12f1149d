// The built-in demo channel: a model server inside the gateway. It answers chat completions by
// echoing the last user message (streaming too) and embeddings with vectors hashed from each input,
// so a fresh install answers its first request with no model server running. It is reached through
// the same transport as a real server (bytes in, bytes out) and reports no usage, so the gateway's
// own token counting is what a demo shows. Its work per request is bounded (docs/configuration.md#channels).
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { setImmediate as setImmediatePromise } from "node:timers/promises";
import type { ChannelConfig } from "../config/schema.js";
import { items, members, valueOf, type Span } from "../json/members.js";
import { JsonScanner, skipSpace } from "../json/scan.js";
import { answerTooLarge, upstreamStatus } from "../upstream/errors.js";
import type { ChannelClient, PostRequest, UpstreamReply } from "../upstream/types.js";

/** Vector length when the request gives no `dimensions`. */
export const ECHO_DIMENSIONS = 256;
/** The most characters of the last user message the demo repeats: a demo answer, not a copy machine. */
export const ECHO_MAX_CHARS = 4096;
/** The most vector values one request may ask for (inputs × dimensions): 2^17 values make about
 *  2.5 MB of JSON and a few ms of hashing; more would let one caller stall the event loop. */
export const ECHO_MAX_VALUES = 131_072;

const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream" };

export function createEchoChannel(channel: ChannelConfig): ChannelClient {
  const reply = (headers: Record<string, string>, body: Readable): UpstreamReply => ({ status: 200, headers, body, maxBytes: channel.maxAnswerBytes });
  const bytes = (buf: Buffer) => Readable.from([buf], { objectMode: false });

  async function post(req: PostRequest): Promise<UpstreamReply> {
    if (typeof req.body === "function") throw upstreamStatus(req.model, 415, "the demo channel reads JSON bodies only", undefined);
    // a turn of the event loop first, as a model server's answer would take: the gateway's other
    // requests (and /healthz) are served between the request's steps, never behind all of them
    await setImmediatePromise();
    if (req.path === "/chat/completions") {
      // a chat body may be megabytes of history: only the model, stream and the last user message are read
      const { model, stream, text } = readChat(Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body));
      if (!stream) return reply(JSON_HEADERS, bytes(Buffer.from(JSON.stringify(completion(model, text)))));
      const events = [...echoChunks(model, text), "[DONE]"];
      return reply(SSE_HEADERS, Readable.from(events.map((e) => Buffer.from(`data: ${e}\n\n`))));
    }
    if (req.path === "/embeddings") {
      const body = JSON.parse(String(req.body)) as Record<string, unknown>;
      const model = String(body.model);
      const answer = Buffer.from(JSON.stringify(embeddings(model, body)));
      if (answer.length > channel.maxAnswerBytes) throw answerTooLarge(model, channel.maxAnswerBytes);
      return reply(JSON_HEADERS, bytes(answer));
    }
    throw upstreamStatus(req.model, 404, `the demo channel does not serve ${req.path}`, undefined);
  }
  return { name: channel.name, post, close: async () => {} };
}

/** What the demo reads of a chat body: its model, whether to stream, and what it answers. */
function readChat(buf: Buffer): { model: string; stream: boolean; text: string } {
  const scan = new JsonScanner(buf);
  let model = "";
  let stream = false;
  let lastUser: unknown;
  for (const m of members(buf, skipSpace(buf, 0), scan)) {
    if (m.key === "model") model = String(valueOf(buf, m));
    else if (m.key === "stream") stream = valueOf(buf, m) === true;
    else if (m.key === "messages") {
      for (const item of items(buf, m.start, scan)) {
        let role: unknown;
        let content: Span | undefined;
        for (const field of members(buf, item.start, scan)) {
          if (field.key === "role") role = valueOf(buf, field);
          else if (field.key === "content") content = field;
        }
        if (role === "user" && content) lastUser = content;
      }
    }
  }
  return { model, stream, text: echoText(lastUser === undefined ? undefined : valueOf(buf, lastUser as Span)) };
}

function echoText(content: unknown): string {
  const said = typeof content === "string" ? content : Array.isArray(content) ? content.map((p: { text?: unknown }) => (typeof p?.text === "string" ? p.text : "")).join("") : "";
  if (!said) return "Echo: (no user message)";
  return said.length <= ECHO_MAX_CHARS ? `Echo: ${said}` : `Echo: ${said.slice(0, ECHO_MAX_CHARS)}… (${said.length - ECHO_MAX_CHARS} more characters)`;
}

function completion(model: string, text: string) {
  return {
    id: `chatcmpl-echo-${Date.now().toString(36)}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
  };
}

function* echoChunks(model: string, text: string): Generator<string> {
  const id = `chatcmpl-echo-${Date.now().toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, string>, finish: string | null) =>
    JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }] });
  yield chunk({ role: "assistant", content: "" }, null);
  for (const piece of text.match(/\S+\s*/g) ?? [text]) yield chunk({ content: piece }, null);
  yield chunk({}, "stop");
}

function embeddings(model: string, body: Record<string, unknown>) {
  const dimensions = typeof body.dimensions === "number" ? body.dimensions : ECHO_DIMENSIONS;
  const input = body.input;
  const items: unknown[] = typeof input === "string" || (Array.isArray(input) && typeof input[0] === "number") ? [input] : Array.isArray(input) ? input : [];
  if (items.length * dimensions > ECHO_MAX_VALUES) {
    throw upstreamStatus(model, 413, `the demo channel makes at most ${ECHO_MAX_VALUES} vector values per request (inputs × dimensions)`, undefined);
  }
  const base64 = body.encoding_format === "base64";
  const data = items.map((item, index) => {
    const vector = hashedVector(item, dimensions);
    return { object: "embedding", index, embedding: base64 ? float32Base64(vector) : vector };
  });
  return { object: "list", data, model };
}

/** A unit vector that depends only on the input: the same input always embeds the same. */
function hashedVector(item: unknown, dimensions: number): number[] {
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
