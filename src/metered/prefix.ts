// A request's prefix (docs/routing.md#prefix): its prompt as the channel receives it — the system
// messages, the tools, then the other messages, each as a role marker and its text — as UTF-8
// parts, for the router's index of what each replica holds. Every dialect is translated into the
// chat messages the channel is sent before this is read, so the same question asked as Chat
// Completions, Messages or Responses has the same prefix. A long content stays the client's bytes
// (RawText) where it holds no escape.
import { RawText } from "../json/raw-text.js";
import type { PrefixParts } from "../upstream/prefix-index.js";
import type { AffinitySignals } from "./affinity.js";

type Message = { role: string; content?: unknown; tool_calls?: unknown; name?: unknown };

const MARK = "\u001e";
const isSystem = (m: Message) => m.role === "system" || m.role === "developer";

export function prefixParts(signals: AffinitySignals, model: string): PrefixParts {
  const parts: Array<string | Uint8Array> = [`${model}\u0000`];
  const prompt = signals.prompt;
  if (typeof prompt === "string" || prompt === undefined) {
    parts.push(prompt ?? "");
    return parts;
  }
  const messages = prompt as ReadonlyArray<Message>;
  for (const m of messages) if (isSystem(m)) addMessage(parts, m);
  if (signals.tools !== undefined && signals.tools !== null) parts.push(`${MARK}tools\u001f`, JSON.stringify(signals.tools));
  for (const m of messages) if (!isSystem(m)) addMessage(parts, m);
  return parts;
}

function addMessage(parts: Array<string | Uint8Array>, m: Message): void {
  parts.push(`${MARK}${m.role}\u001f`);
  const content = m.content;
  if (typeof content === "string") parts.push(content);
  else if (content instanceof RawText) parts.push(content.utf8());
  else if (Array.isArray(content)) for (const part of content) parts.push(partText(part));
  if (m.tool_calls !== undefined) parts.push(JSON.stringify(m.tool_calls));
}

function partText(part: unknown): string {
  const text = (part as { text?: unknown } | null)?.text;
  return typeof text === "string" ? text : JSON.stringify(part ?? null);
}
