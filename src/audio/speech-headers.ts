// The headers a streamed audio answer gets (docs/fleet.md#speech): the upstream's content type (the
// format it actually produced), its length and encoding when it gave them, and nothing else of the
// upstream's — no hop-by-hop header (Connection, Transfer-Encoding, Keep-Alive, …) describes the
// client's connection, and any other may carry the upstream's internals.
import type { IncomingHttpHeaders } from "node:http";
import type { SpeechFormat } from "./speech-request.js";

/** What each format is when the upstream names no content type (OpenAI's own types). */
const FORMAT_TYPES: Record<SpeechFormat, string> = {
  mp3: "audio/mpeg",
  opus: "audio/ogg",
  aac: "audio/aac",
  flac: "audio/flac",
  wav: "audio/wav",
  pcm: "audio/pcm",
};

const DIGITS = /^\d{1,15}$/;

/** The client's headers for the upstream's audio. `format`: the request's `response_format`. */
export function speechHeaders(upstream: IncomingHttpHeaders | Headers, format: SpeechFormat | undefined): Record<string, string> {
  const get = (name: string): string | undefined => {
    const value = upstream instanceof Headers ? upstream.get(name) : upstream[name];
    return (Array.isArray(value) ? value[0] : value) ?? undefined;
  };
  const out: Record<string, string> = {
    "content-type": get("content-type") || FORMAT_TYPES[format ?? "mp3"],
    // nginx would otherwise hold the audio until its buffer fills: the first words must play early
    "x-accel-buffering": "no",
  };
  const encoding = get("content-encoding");
  if (encoding) out["content-encoding"] = encoding;
  // a length is only the body's when no transfer coding frames it
  const length = get("content-length");
  if (length && DIGITS.test(length.trim()) && !get("transfer-encoding")) out["content-length"] = length.trim();
  return out;
}
