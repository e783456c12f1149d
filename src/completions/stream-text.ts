// What a streamed legacy completion says (docs/fleet.md#completions). Its SSE events carry
// `text_completion` objects whose `choices[].text` is the next piece of text — where a chat stream
// has `choices[].delta.content`. The SSE relay (src/chat/sse-relay.ts) recovers the chat's text and
// finish reason today; these functions are the completion's counterparts for it to be given:
// `TEXT_EVENT` for its first-content signal, `chunkText` per parsed chunk, `collectCompletionStream`
// over the relayed bytes.
import type { Usage } from "../upstream/types.js";
import { reportedUsage } from "./answer.js";

/** An event holding answer text: what the relay watches for the first content. */
export const TEXT_EVENT = /"text": ?"[^"]/;

export interface ChunkText {
  /** the choice's index (the first: 0) */
  index: number;
  text: string;
  finishReason: string | undefined;
}

/** The text pieces of one parsed `text_completion` chunk, one per choice it carries. */
export function chunkText(chunk: unknown): ChunkText[] {
  const choices = (chunk as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return [];
  return choices.flatMap((c: { index?: unknown; text?: unknown; finish_reason?: unknown } | null) => {
    if (!c || typeof c !== "object") return [];
    const index = typeof c.index === "number" ? c.index : 0;
    return [{ index, text: typeof c.text === "string" ? c.text : "", finishReason: typeof c.finish_reason === "string" ? c.finish_reason : undefined }];
  });
}

export interface CollectedCompletion {
  /** each choice's whole text, by index (with n > 1 or several prompts the choices interleave) */
  texts: string[];
  /** the first choice's text and last finish reason: what a report shows */
  text: string;
  finishReason: string | undefined;
  /** the usage chunk's, when the upstream sent one */
  usage: Usage | undefined;
}

/** Everything the stream said, from its SSE bytes (whole events; `[DONE]` and comments skipped). */
export function collectCompletionStream(sse: string | Buffer | Buffer[]): CollectedCompletion {
  const text = Array.isArray(sse) ? Buffer.concat(sse).toString("utf8") : sse.toString();
  const texts: string[] = [];
  const reasons: Array<string | undefined> = [];
  let usage: Usage | undefined;
  for (const event of text.replace(/\r\n?/g, "\n").split("\n\n")) {
    const data = dataOf(event);
    if (data === undefined || data === "[DONE]") continue;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      continue; // the relay has failed the stream on it already
    }
    usage = reportedUsage((chunk as { usage?: unknown }).usage) ?? usage;
    for (const piece of chunkText(chunk)) {
      texts[piece.index] = (texts[piece.index] ?? "") + piece.text;
      if (piece.finishReason) reasons[piece.index] = piece.finishReason;
    }
  }
  for (let i = 0; i < texts.length; i++) texts[i] ??= "";
  return { texts, text: texts[0] ?? "", finishReason: reasons[0], usage };
}

/** The `data:` payload of one SSE event (several data lines join with newlines). */
function dataOf(event: string): string | undefined {
  let data: string | undefined;
  for (const line of event.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data;
}
