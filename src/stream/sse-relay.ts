// Relays an upstream SSE byte stream to the client. Bytes pass through untouched unless an event
// carries something the gateway must act on (a usage object, an error, `[DONE]`), or the client
// asked for FastGPT's event stream; only such events are parsed, and the first (the answer's id and
// model, docs/tracing.md#spans). The answer's text and finish reason are recovered from the kept
// bytes afterwards, and only when something needs them: where a chunk holds its text is the kind's
// (`StreamText`: a chat's `delta.content`, a legacy completion's `text`), the rest of the relay is
// the same for both.
import { CLOSE_BRACE, OPEN_BRACE, isSpace } from "../json/scan.js";
import { badUpstreamReply, upstreamReportedError } from "../upstream/errors.js";
import { answerNames, type AnswerNames, type Usage } from "./chunk.js";
import type { AnswerSink } from "./pump.js";
import { SseSplitter } from "./sse-split.js";
import { dataOf } from "./sse.js";

const EVENT_END = "\n\n";
/** What makes an event worth parsing. `"usage":null`, which OpenAI-style servers put on every
 *  chunk once usage is asked for, is not: only a usage object is. A false positive costs a parse. */
const MARKER = /"usage": ?\{|\[DONE\]|"error"/g;
const ANSWER_EVENT = Buffer.from("event: answer\n");

/** Where a streamed chunk holds its answer text. */
export interface StreamText {
  /** an event holding answer text, for the first-content signal (a false positive costs nothing) */
  content: RegExp;
  /** the text one choice of a parsed chunk adds */
  piece(choice: ChunkChoice): string | null | undefined;
}

/** Chat Completions: `choices[].delta.content`. */
export const CHAT_TEXT: StreamText = { content: /"content": ?"[^"]/, piece: (choice) => choice.delta?.content };

export interface RelayOptions {
  /** FastGPT event stream: every chunk as `event: answer` */
  detail: boolean;
  /** the client asked for the usage chunk */
  includeUsage: boolean;
  model: string;
  /** writes to the client; false asks the caller to wait for drain */
  write: (bytes: string | Buffer) => boolean;
  onFirstContent: () => void;
  /** the name the client asked for, when it was an alias: every chunk's `model` says it */
  answerModel?: string;
  /** where the answer text is (default: a chat's) */
  text?: StreamText;
  /** rewrites each region before it is relayed (FastGPT's reasoning_content, chat/reasoning.ts) */
  rewrite?: (region: Buffer) => Buffer;
}

export interface ChunkChoice {
  index?: number;
  delta?: { content?: string | null };
  text?: string | null;
  finish_reason?: string | null;
}

const MODEL_FIELD = /"model": ?"(?:[^"\\]|\\.)*"/g;

interface ChunkShape {
  choices?: ChunkChoice[];
  usage?: Usage | null;
  error?: unknown;
}

interface Collected {
  /** each choice's text, by index (a map: an upstream's index is not trusted to be small) */
  texts: Map<number, string>;
  /** the first choice's last finish reason */
  finishReason: string | undefined;
}

// A class, not a closure factory: one of these is made per streamed request.
export class SseRelay implements AnswerSink {
  done = false;
  usage: Usage | undefined;
  /** the answer's id and model as the upstream's first chunk names them (before an alias's rewrite) */
  names: AnswerNames | undefined;
  readonly #opts: RelayOptions;
  readonly #text: StreamText;
  readonly #kept: Buffer[] = [];
  readonly #events: SseSplitter;
  #firstContent = false;
  #collected: Collected | undefined;

  constructor(opts: RelayOptions) {
    this.#opts = opts;
    this.#text = opts.text ?? CHAT_TEXT;
    this.#events = new SseSplitter(opts.model);
  }

  /** Feeds upstream bytes; returns what the client write returned (false: apply backpressure). */
  push(chunk: Buffer): boolean {
    if (this.done) return true; // after [DONE]: the rest is drained, not relayed
    const region = this.#events.push(chunk);
    return region === undefined || this.#relay(region);
  }

  /** The upstream ended: anything left unterminated is taken as a last event. */
  finish(): void {
    if (this.done) return;
    const rest = this.#events.finish();
    if (rest) this.#relay(Buffer.concat([rest, Buffer.from(EVENT_END)]));
  }

  /** The answer's text (the first choice's), parsed from every relayed region (memoized). */
  text(): string {
    return this.#collect().texts.get(0) ?? "";
  }

  /** Every choice's text, in the order of their indexes (with n > 1 or several prompts the choices
   *  interleave in the stream). */
  texts(): string[] {
    return [...this.#collect().texts].sort((a, b) => a[0] - b[0]).map(([, text]) => text);
  }

  #collect(): Collected {
    return (this.#collected ??= collect(this.#kept, this.#text));
  }

  /** The first choice's last finish reason; undefined when none. Read from the end of the kept bytes
   *  (one event parsed) unless the text was parsed already or the event found is another choice's. */
  finishReason(): string | undefined {
    return this.#collected?.finishReason ?? lastFinishReason(this.#kept) ?? this.#collect().finishReason;
  }

  #relay(region: Buffer): boolean {
    if (this.names === undefined) this.names = firstNames(region);
    // an alias's answer names the alias (docs/configuration.md#aliases): rewritten only then
    if (this.#opts.answerModel !== undefined) region = Buffer.from(region.toString("utf8").replace(MODEL_FIELD, `"model":${JSON.stringify(this.#opts.answerModel)}`));
    if (this.#opts.rewrite) region = this.#opts.rewrite(region);
    // one byte per character: positions in `view` are byte offsets in `region`
    const view = region.toString("latin1");
    const bad = firstMalformed(view);
    if (bad >= 0) {
      // the events before a malformed one still reach the client, then the stream fails
      if (bad > 0) this.#relay(region.subarray(0, bad));
      throw badUpstreamReply(this.#opts.model);
    }
    this.#kept.push(region);
    if (!this.#firstContent && this.#text.content.test(view)) {
      this.#firstContent = true;
      this.#opts.onFirstContent();
    }
    const out: Buffer[] = [];
    for (let start = 0; start < region.length && !this.done; ) {
      // Whole events up to the one holding the next marker pass as bytes; that one is parsed.
      MARKER.lastIndex = start;
      const marker = this.#opts.detail ? { index: start } : MARKER.exec(view);
      if (!marker) {
        out.push(start === 0 ? region : region.subarray(start));
        break;
      }
      const before = view.lastIndexOf(EVENT_END, marker.index);
      const eventStart = before < start ? start : before + EVENT_END.length;
      const found = view.indexOf(EVENT_END, marker.index);
      const eventEnd = found < 0 ? region.length : found + EVENT_END.length;
      if (eventStart > start) out.push(region.subarray(start, eventStart));
      try {
        this.#relayEvent(region, view, eventStart, eventEnd, out);
      } catch (err) {
        // the events before a broken one still reach the client, then the stream fails
        if (out.length > 0) this.#opts.write(Buffer.concat(out));
        throw err;
      }
      start = eventEnd;
    }
    if (out.length === 0) return true;
    return this.#opts.write(out.length === 1 ? out[0]! : Buffer.concat(out));
  }

  #relayEvent(region: Buffer, view: string, start: number, end: number, out: Buffer[]): void {
    MARKER.lastIndex = start;
    const marked = MARKER.exec(view);
    if (!marked || marked.index >= end) {
      // only in detail mode does an unmarked event get here: one with data needs the FastGPT event name
      const data = view.indexOf("data:", start);
      if (data >= 0 && data < end) out.push(ANSWER_EVENT);
      out.push(region.subarray(start, end));
      return;
    }
    const forward = this.#inspect(region.toString("utf8", start, end));
    if (forward !== undefined) out.push(Buffer.from(`${this.#opts.detail ? "event: answer\n" : ""}data: ${forward}\n\n`));
  }

  /** Acts on one marked event; returns the data the client gets, or undefined for none. */
  #inspect(block: string): string | undefined {
    const data = dataOf(block);
    if (data === undefined) return undefined;
    if (data === "[DONE]") {
      this.done = true;
      return undefined;
    }
    const chunk = parseChunk(data, this.#opts.model);
    if (!chunk.usage) return data;
    this.usage = chunk.usage;
    if (this.#opts.includeUsage) return data;
    if (!chunk.choices || chunk.choices.length === 0) return undefined;
    delete chunk.usage;
    return JSON.stringify(chunk);
  }
}

const SPACE = 32;

/**
 * Where the first event starts whose data is neither `[DONE]` nor shaped like a JSON object (a `{`
 * first, after the one space SSE allows, and a `}` last, before JSON's white space): garbage or a
 * truncated chunk. -1 when all are well formed. Cheap enough for every event: two searches and a few
 * character reads; no parsing, nor a scan of the object (tens of times the cost).
 */
export function firstMalformed(view: string): number {
  for (let at = 0; at < view.length; ) {
    const found = view.indexOf(EVENT_END, at);
    const end = found < 0 ? view.length : found;
    const data = view.indexOf("data:", at);
    if (data >= 0 && data < end) {
      let first = data + 5;
      if (view.charCodeAt(first) === SPACE) first++;
      let last = end - 1;
      while (last > first && isSpace(view.charCodeAt(last))) last--;
      const object = view.charCodeAt(first) === OPEN_BRACE && view.charCodeAt(last) === CLOSE_BRACE;
      if (!object && !view.startsWith("[DONE]", first)) return at;
    }
    at = end + EVENT_END.length;
  }
  return -1;
}


/** One event's data as a chunk: a 502 when it is not a JSON object, or when it reports an error
 *  (whose text may carry the upstream's internals, so the client gets less). */
export function parseChunk<T extends object = ChunkShape>(data: string, model: string): T {
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    throw badUpstreamReply(model);
  }
  if (!chunk || typeof chunk !== "object") throw badUpstreamReply(model);
  if ((chunk as { error?: unknown }).error) throw upstreamReportedError(model);
  return chunk as T;
}

/** The id and model of the region's first event, when it is a chunk; undefined when the region
 *  holds no data yet (a comment, a keep-alive). One event parsed once per answer. */
function firstNames(region: Buffer): AnswerNames | undefined {
  const end = region.indexOf(EVENT_END);
  const data = dataOf(region.toString("utf8", 0, end < 0 ? region.length : end));
  if (data === undefined) return undefined;
  try {
    return answerNames(JSON.parse(data) as { id?: unknown; model?: unknown });
  } catch {
    return {}; // not a chunk: the relay fails the stream on it
  }
}

const FINISH_MARKS = [Buffer.from('"finish_reason":"'), Buffer.from('"finish_reason": "')];

/** The finish reason of the last event that names one, if that event is the first choice's. */
function lastFinishReason(regions: Buffer[]): string | undefined {
  for (let r = regions.length - 1; r >= 0; r--) {
    const region = regions[r]!;
    const at = Math.max(...FINISH_MARKS.map((mark) => region.lastIndexOf(mark)));
    if (at < 0) continue;
    const before = region.lastIndexOf(EVENT_END, at);
    const end = region.indexOf(EVENT_END, at);
    const data = dataOf(region.toString("utf8", before < 0 ? 0 : before + EVENT_END.length, end < 0 ? region.length : end));
    try {
      const choice = (JSON.parse(data ?? "") as ChunkShape).choices?.find((c) => (c.index ?? 0) === 0);
      return choice?.finish_reason ?? undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function collect(regions: Buffer[], where: StreamText): Collected {
  const out: Collected = { texts: new Map(), finishReason: undefined };
  for (const region of regions) {
    for (const block of region.toString("utf8").split(EVENT_END)) {
      const data = dataOf(block);
      if (data === undefined || data === "[DONE]") continue;
      let choices: ChunkChoice[] | undefined;
      try {
        choices = (JSON.parse(data) as ChunkShape).choices;
      } catch {
        continue; // relayed regions were valid or already failed the stream
      }
      for (const choice of Array.isArray(choices) ? choices : []) {
        const index = typeof choice?.index === "number" ? choice.index : 0;
        const piece = where.piece(choice ?? {});
        out.texts.set(index, (out.texts.get(index) ?? "") + (typeof piece === "string" ? piece : ""));
        // with n > 1 the choices interleave: the answer's finish reason is the first one's (docs/api.md#streams)
        if (index === 0 && choice?.finish_reason) out.finishReason = choice.finish_reason;
      }
    }
  }
  return out;
}
