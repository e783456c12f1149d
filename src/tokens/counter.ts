// Token counting (CONTRACTS §5) with gpt-tokenizer, plus the cheap byte bound that lets the hot path
// skip counting: a token is never shorter than one UTF-8 byte, so bytes bound tokens from above.
import { createRequire } from "node:module";
import type { ChatMessage } from "../chat/request-schema.js";

export type TokenizerName = "cl100k_base" | "o200k_base";

// User text may contain special-token spellings such as "<|endoftext|>": count them as plain text.
const AS_TEXT = { disallowedSpecial: new Set<string>() };

interface Encoder {
  countTokens(text: string, options: typeof AS_TEXT): number;
}
// An encoding's tables take 40-70 MB: each is loaded (synchronously) the first time it is needed,
// which is never while upstreams report usage and the byte bound proves every prompt fits.
const require = createRequire(import.meta.url);
const encoders = new Map<TokenizerName, Encoder>();
function encoder(name: TokenizerName): Encoder {
  let e = encoders.get(name);
  if (!e) encoders.set(name, (e = require(`gpt-tokenizer/cjs/encoding/${name}`) as Encoder));
  return e;
}

const MESSAGE_OVERHEAD = 4;

export function countText(text: string, tokenizer: TokenizerName = "cl100k_base"): number {
  return text.length === 0 ? 0 : encoder(tokenizer).countTokens(text, AS_TEXT);
}

/** The text of a message's content: a string, or the text parts of a multi-part content. */
export function messageText(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!content) return "";
  let text = "";
  for (const part of content) if (part.type === "text") text += (text ? "\n" : "") + part.text;
  return text;
}

/** The text of the last user message; "" when there is none. */
export function lastUserText(messages: ChatMessage[]): string {
  const last = messages.findLast((m) => m.role === "user");
  return last ? messageText(last.content) : "";
}

/** `tokens(role + "\n" + content, trimmed) + 4`. */
export function countMessage(message: ChatMessage, tokenizer: TokenizerName = "cl100k_base"): number {
  return countText(`${message.role}\n${messageText(message.content)}`.trim(), tokenizer) + MESSAGE_OVERHEAD;
}

/** An upper bound of countMessage that costs one byte-length pass. */
export function boundMessage(message: ChatMessage): number {
  return Buffer.byteLength(messageText(message.content), "utf8") + message.role.length + 1 + MESSAGE_OVERHEAD;
}

export function countMessages(messages: ChatMessage[], tokenizer: TokenizerName = "cl100k_base"): number {
  let total = 0;
  for (const m of messages) total += countMessage(m, tokenizer);
  return total;
}

/** countMessages, yielding to the event loop between messages. */
export async function countMessagesAsync(messages: ChatMessage[], tokenizer: TokenizerName = "cl100k_base"): Promise<number> {
  let total = 0;
  for (const m of messages) {
    total += countMessage(m, tokenizer);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return total;
}
