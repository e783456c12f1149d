// A streamed chat answer translated for a dialect (docs/architecture.md#dialects): every upstream
// event is parsed and handed to the dialect's translator, whose events are what the client reads.
// What the gateway must know of the answer — usage, finish reason, the text and tool arguments
// generated (counted when the upstream gives no usage) — is taken on the way.
import { StringDecoder } from "node:string_decoder";
import { CLOSE_BRACE, OPEN_BRACE } from "../json/scan.js";
import type { ChatChunk, Usage } from "./chunk.js";
import type { AnswerSink } from "./pump.js";
import { dataOf } from "./sse.js";
import { parseChunk } from "./sse-relay.js";

const EVENT_END = "\n\n";

/** What a dialect makes of each upstream chunk: its own SSE events ("" when none). */
export interface ChunkTranslator {
  chunk(chunk: ChatChunk): string;
}

export class TranslatedRelay implements AnswerSink {
  done = false;
  usage: Usage | undefined;
  #finishReason: string | undefined;
  #generated: string[] = [];
  #pending = "";
  readonly #decoder = new StringDecoder("utf8");
  #first = false;

  constructor(
    private readonly translator: ChunkTranslator,
    private readonly write: (text: string) => boolean,
    private readonly model: string,
    private readonly onFirstContent: () => void,
  ) {}

  push(chunk: Buffer): boolean {
    if (this.done) return true;
    // a character's bytes may come in two reads: the decoder keeps the first ones for the next
    let text = this.#pending + this.#decoder.write(chunk);
    if (text.includes("\r")) text = text.replace(/\r\n?/g, "\n");
    const cut = text.lastIndexOf(EVENT_END);
    if (cut < 0) {
      this.#pending = text;
      return true;
    }
    this.#pending = text.slice(cut + EVENT_END.length);
    let out = "";
    for (const block of text.slice(0, cut).split(EVENT_END)) {
      out += this.#event(block);
      if (this.done) break;
    }
    return out === "" || this.write(out);
  }

  /** The upstream ended: an unterminated last event is taken as one. */
  finish(): void {
    if (this.done) return;
    const rest = this.#pending + this.#decoder.end();
    if (!rest.trim()) return;
    this.#pending = "";
    const out = this.#event(rest);
    if (out) this.write(out);
  }

  finishReason(): string | undefined {
    return this.#finishReason;
  }

  /** What the model generated: text, reasoning and tool arguments (counted when no usage came). */
  generated(): string {
    return this.#generated.join("");
  }

  #event(block: string): string {
    const data = dataOf(block);
    if (data === undefined) return "";
    if (data === "[DONE]") {
      this.done = true;
      return "";
    }
    const chunk = textOnly(data) ?? parseChunk<ChatChunk>(data, this.model);
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice) this.#take(choice);
    return this.translator.chunk(chunk);
  }

  #take(choice: NonNullable<ChatChunk["choices"]>[number]): void {
    const delta = choice.delta;
    if (choice.finish_reason) this.#finishReason = choice.finish_reason;
    if (!delta) return;
    const before = this.#generated.length;
    for (const piece of [delta.content, delta.reasoning_content, delta.reasoning]) if (piece) this.#generated.push(piece);
    for (const call of delta.tool_calls ?? []) if (call.function?.arguments) this.#generated.push(call.function.arguments);
    if (!this.#first && (this.#generated.length > before || (delta.tool_calls?.length ?? 0) > 0)) {
      this.#first = true;
      this.onFirstContent();
    }
  }
}


/** The common chunk — a piece of the first choice's text, nothing else in its delta, not the last —
 *  as servers write it (vLLM, llama.cpp, Ollama: no spaces), matched where its choices are. */
const TEXT_ONLY = /"choices":\[\{"index":0,"delta":\{(?:"role":"(assistant)",)?"content":"((?:[^"\\]|\\.)*)"\}(?:,"logprobs":null)?,"finish_reason":null\}\]/;

/**
 * That chunk read without parsing it whole (the parse costs more than the rest of its relay); any
 * other chunk — reasoning, tool calls, a finish, usage, an error, spaces — is undefined, and parsed.
 */
export function textOnly(data: string): ChatChunk | undefined {
  if (data.charCodeAt(0) !== OPEN_BRACE || data.charCodeAt(data.length - 1) !== CLOSE_BRACE) return undefined;
  const found = TEXT_ONLY.exec(data);
  if (found === null || data.includes('"usage":{') || data.includes('"error"')) return undefined;
  const text = found[2]!;
  let content = text;
  if (text.includes("\\")) {
    try {
      content = JSON.parse(`"${text}"`) as string;
    } catch {
      return undefined; // a bad escape: the whole parse fails it
    }
  }
  return { choices: [{ index: 0, delta: found[1] ? { role: found[1], content } : { content }, finish_reason: null }] };
}
