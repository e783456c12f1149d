// Reading a whole upstream answer: bounded by the channel's maxAnswerBytes, transport failures
// mapped to the channel errors (docs/api.md#upstream-failures).
import type { Readable } from "node:stream";
import { answerTooLarge, badUpstreamReply, mapTransportError } from "./errors.js";
import type { UpstreamReply } from "./types.js";

class TooLarge extends Error {}

/** The body's bytes; past `limit` bytes the body is destroyed and TooLarge thrown. */
export async function readLimited(body: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new TooLarge();
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

/** The whole answer; past the channel's limit it is the upstream's fault (502). */
export async function readReply(reply: UpstreamReply, model: string): Promise<Buffer> {
  try {
    return await readLimited(reply.body, reply.maxBytes);
  } catch (err) {
    if (err instanceof TooLarge) throw answerTooLarge(model, reply.maxBytes);
    throw mapTransportError(err, model);
  }
}

/** The answer's JSON when `valid` accepts it; anything else is the upstream's fault (502). */
export async function readJsonReply<T>(reply: UpstreamReply, model: string, valid: (v: unknown) => v is T): Promise<T> {
  const text = (await readReply(reply, model)).toString("utf8");
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw badUpstreamReply(model);
  }
  if (!valid(answer)) throw badUpstreamReply(model);
  return answer;
}

/** The reply's content type, lower-cased ("" when none). */
export function contentTypeOf(reply: UpstreamReply): string {
  const type = reply.headers["content-type"];
  return String(Array.isArray(type) ? type[0] : (type ?? "")).toLowerCase();
}
