// A streamed chat answer translated for a dialect (docs/architecture.md#dialects): every upstream
// event is parsed and handed to the dialect's translator, whose events are what the client reads.
// What the gateway must know of the answer — usage, finish reason, the text and tool arguments
// generated (counted when the upstream gives no usage) — is taken on the way.
import { CLOSE_BRACE, OPEN_BRACE } from "../json/scan.js";
import { answerNames, type AnswerNames, type ChatChunk, type Usage } from "./chunk.js";
import type { AnswerSink } from "./pump.js";
import { dataOf } from "./sse.js";
import { SseSplitter } from "./sse-split.js";
import { parseChunk } from "./sse-relay.js";

const EVENT_END = "\n\n";

/** What a dialect makes of each upstream chunk: its own SSE events ("" when none). */
export interface ChunkTranslator {
  chunk(chunk: ChatChunk): string;
}

export class TranslatedRelay implements AnswerSink {
  done = false;
  usage: Usage | undefined;
  /** the answer's id and model, from the first parsed chunk that names either */
  names: AnswerNames | undefined;
  #finishReason: string | undefined;
  #generated: string[] = [];
  readonly #events: SseSplitter;
  #first = false;

  constructor(
    private readonly translator: ChunkTranslator,
    private readonly write: (text: string) => boolean,
    private readonly model: string,
    private readonly onFirstContent: () => void,
  ) {
    this.#events = new SseSplitter(model);
  }

  push(chunk: Buffer): boolean {
    if (this.done) return true;
    const region = this.#events.push(chunk);
    if (region === undefined) return true;
    // a region ends with a blank line: no character's bytes are cut at its end
    let out = "";
    for (const block of region.toString("utf8", 0, region.length - EVENT_END.length).split(EVENT_END)) {
      out += this.#event(block);
      if (this.done) break;
    }
    return out === "" || this.write(out);
  }

  /** The upstream ended: an unterminated last event is taken as one. */
  finish(): void {
    if (this.done) return;
    const rest = this.#events.finish()?.toString("utf8") ?? "";
    if (!rest.trim()) return;
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
    if (this.names === undefined && (chunk.id !== undefined || chunk.model !== undefined)) this.names = answerNames(chunk);
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
