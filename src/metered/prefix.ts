// A request's prefix (docs/routing.md#prefix): its prompt as the channel receives it — the system
// messages, the tools, then the other messages, each as a role marker and its text — as UTF-8
// parts, for the router's index of what each replica holds. Every dialect is translated into the
// chat messages the channel is sent before this is read, so the same question asked as Chat
// Completions, Messages or Responses has the same prefix. A long content stays the client's bytes
// (RawText) where it holds no escape. Parts stop once they hold MAX_PREFIX_BYTES (a length in UTF-16
// units is at most the bytes it encodes to), and a string of another part's JSON is cut there: the
// hash reads no further, so a 4 MB image, tool list or conversation costs no more than its start.
import { RawText } from "../json/raw-text.js";
import { MAX_PREFIX_BYTES, type PrefixParts } from "../upstream/prefix-index.js";
import type { AffinitySignals } from "./affinity.js";

type Message = { role: string; content?: unknown; tool_calls?: unknown; name?: unknown };

const MARK = "\u001e";
const isSystem = (m: Message) => m.role === "system" || m.role === "developer";

/** The parts so far, and at least how many bytes they hold. */
class Parts {
  readonly list: Array<string | Uint8Array> = [];
  #length = 0;

  get full(): boolean {
    return this.#length >= MAX_PREFIX_BYTES;
  }

  push(...parts: Array<string | Uint8Array>): void {
    for (const p of parts) {
      if (this.full) return;
      this.list.push(p);
      this.#length += p.length;
    }
  }
}

export function prefixParts(signals: AffinitySignals, model: string): PrefixParts {
  const parts = new Parts();
  parts.push(`${model}\u0000`);
  const prompt = signals.prompt;
  if (typeof prompt === "string" || prompt === undefined) {
    parts.push(prompt ?? "");
    return parts.list;
  }
  const messages = prompt as ReadonlyArray<Message>;
  for (const m of messages) if (isSystem(m)) addMessage(parts, m);
  if (signals.tools !== undefined && signals.tools !== null && !parts.full) parts.push(`${MARK}tools\u001f`, json(signals.tools));
  for (const m of messages) if (!isSystem(m)) addMessage(parts, m);
  return parts.list;
}

function addMessage(parts: Parts, m: Message): void {
  if (parts.full) return;
  parts.push(`${MARK}${m.role}\u001f`);
  const content = m.content;
  if (typeof content === "string") parts.push(content);
  else if (content instanceof RawText) parts.push(content.utf8());
  else if (Array.isArray(content)) for (const part of content) if (!parts.full) parts.push(partText(part));
  if (m.tool_calls !== undefined && !parts.full) parts.push(json(m.tool_calls));
}

function partText(part: unknown): string {
  const text = (part as { text?: unknown } | null)?.text;
  return typeof text === "string" ? text : json(part ?? null);
}

/** A string this long makes at least MAX_PREFIX_BYTES of JSON: what follows it is never hashed. */
const cutLong = (_key: string, value: unknown) => (typeof value === "string" && value.length > MAX_PREFIX_BYTES ? value.slice(0, MAX_PREFIX_BYTES) : value);
const json = (value: unknown): string => JSON.stringify(value, cutLong);
