// A channel's `modelMapping` (aiproxy's model_mapping, docs/configuration.md#channels): the name a
// model has on that model server. The request's `"model"` is renamed on the way out and the
// answer's on the way back, byte for byte, so answers and usage rows keep the configured name and
// no kind learns of it. Only channels with a mapping pay for it.
import { Transform, pipeline, type Readable } from "node:stream";

/** `"model":"<name>"` as JSON writes it, with or without a space, in latin1 (one character a byte). */
const fields = (name: string) => {
  const value = Buffer.from(JSON.stringify(name)).toString("latin1");
  return [`"model":${value}`, `"model": ${value}`];
};

/** The request body with the model's name on this server (a body made by a function — an upload — is sent as it is). */
export function mapRequestModel<B>(body: B, from: string, to: string): B {
  if (typeof body !== "string" && !Buffer.isBuffer(body)) return body;
  const text = Buffer.isBuffer(body) ? body.toString("latin1") : Buffer.from(body).toString("latin1");
  const out = replaceAll(text, fields(from), fields(to)[0]!);
  return (Buffer.isBuffer(body) ? Buffer.from(out, "latin1") : Buffer.from(out, "latin1").toString("utf8")) as B;
}

/** The answer's bytes with the server's name of the model back to the configured one. */
export function unmapAnswerModel(body: Readable, server: string, configured: string): Readable {
  const find = fields(server);
  const replacement = fields(configured)[0]!;
  const keep = Math.max(...find.map((f) => f.length)) - 1;
  let tail = "";
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const text = replaceAll(tail + chunk.toString("latin1"), find, replacement);
      // what may be the start of a field cut by the chunk's end waits for the next chunk
      const hold = Math.min(keep, text.length);
      tail = text.slice(text.length - hold);
      done(null, Buffer.from(text.slice(0, text.length - hold), "latin1"));
    },
    flush(done) {
      done(null, tail ? Buffer.from(tail, "latin1") : null);
    },
  });
  // an error or early close of either side ends both (and so releases the connection)
  return pipeline(body, transform, () => {});
}

function replaceAll(text: string, find: string[], replacement: string): string {
  let out = text;
  for (const f of find) if (out.includes(f)) out = out.split(f).join(replacement);
  return out;
}
