// Token counting (docs/api.md#tokens-and-points) with gpt-tokenizer, plus the cheap byte bound that lets the hot path
// skip counting: a token is never shorter than one UTF-8 byte, so bytes bound tokens from above.
// gpt-tokenizer's BPE is quadratic in the length of one pre-tokenized piece (a 400 KB word: minutes),
// so a piece longer than MAX_PIECE is counted in MAX_PIECE-unit chunks; any other text counts
// exactly as countTokens counts it, in linear time. The async counts yield to the event loop every
// SLICE_MS and can stop once past a ceiling.
import { createRequire } from "node:module";
import { setImmediate as nextTurn } from "node:timers/promises";
import { loadEncoder, type TokenizerName } from "./encodings.js";
/** A message as counting sees it: any chat message (src/chat/request-schema.ts) is one. */
export interface ChatMessage {
  role: string;
  content: string | RawText | ReadonlyArray<{ type: string; text?: string; refusal?: unknown }> | null;
  tool_calls?: unknown;
}

/** The worst-case tokens of one content part that is not text (an image, audio, a file), by its
 *  type: what the model declares it may take (docs/configuration.md#llmmodels). A type not listed
 *  costs nothing. */
export type PartCosts = Readonly<Record<string, number>>;
import { RawText } from "../json/raw-text.js";

export type { TokenizerName } from "./encodings.js";

export interface CountOptions {
  /** stop as soon as the running total exceeds this: the result is then a partial count above it */
  stopAbove?: number;
  /** shares one event-loop slice between several counts (one per count when absent) */
  pacer?: Pacer;
}

/** Lets counting yield to the event loop once the current turn has run SLICE_MS. */
export interface Pacer {
  /** a promise to await when the slice is used up; undefined while there is time left */
  due(): Promise<void> | undefined;
}

// User text may contain special-token spellings such as "<|endoftext|>": count them as plain text.
const AS_TEXT = { disallowedSpecial: new Set<string>() };
export const MESSAGE_OVERHEAD = 4;
// Pieces up to this many UTF-16 units count exactly. BPE time per unit grows with the piece; at 128
// units of CJK (384 bytes), the costliest, it is still about 1 µs.
const MAX_PIECE = 128;
// A piece longer than MAX_PIECE holds this many spaces or non-spaces in a row (a punctuation piece
// is " " + punctuation + newlines).
const LONG_RUN = MAX_PIECE / 2;
// Text goes to gpt-tokenizer in parts of about this many units: about 1 ms of words never seen
// before (4,096 units: 4 ms, 24 ms at the 99th percentile on a loaded machine), so that a slice of
// counting is SLICE_MS and one part at most. The first parts are smaller, doubling up to it: a count
// that stops early (a bound proved a fit) counts little.
const PART_UNITS = 1024;
const FIRST_PART_UNITS = 256;
// Where text has no plain part, the pre-tokenizing regex runs over windows of this many units: one
// match over a 2 MB run of CJK takes 50 ms.
const WINDOW_UNITS = 16384;
const SLICE_MS = 4;

// gpt-tokenizer caches the BPE of each piece it has seen, 100,000 by default: a chunk of a long
// piece holds over 1 KB, so a few 2 MB words would pin 200 MB.
const MERGE_CACHE_ENTRIES = 10_000;

interface Tokenizer {
  count(part: string): number;
  /** gpt-tokenizer's own pre-tokenizing regex for the encoding */
  pieces: RegExp;
}
// An encoding's tables take 40-70 MB: each is loaded (synchronously) the first time it is needed,
// which is never while upstreams report usage and the byte bound proves every prompt fits.
const require = createRequire(import.meta.url);
const tokenizers = new Map<TokenizerName, Tokenizer>();
function tokenizer(name: TokenizerName): Tokenizer {
  let t = tokenizers.get(name);
  if (!t) {
    const encoder = loadEncoder(name);
    encoder.setMergeCacheSize(MERGE_CACHE_ENTRIES);
    const splits = require("gpt-tokenizer/cjs/encodingParams/constants") as Record<string, RegExp>;
    const pieces = splits[name === "cl100k_base" ? "CL100K_TOKEN_SPLIT_REGEX" : "O200K_TOKEN_SPLIT_REGEX"]!;
    t = { count: (part) => encoder.countTokens(part, AS_TEXT), pieces };
    tokenizers.set(name, t);
  }
  return t;
}

/** Loads an encoding's tables now (40-70 MB, about half a second): called at start for the configured
 *  models, so no request ever waits for a load with the event loop blocked. */
export function loadTokenizer(name: TokenizerName): void {
  tokenizer(name);
}

/** The tokens of one part of a text, and where the part ends. */
export type Part = readonly [tokens: number, end: number];

/**
 * Token counts of consecutive parts of `text`, which add up to countTokens(text) whenever no piece
 * of the encoding's pre-tokenizing regex is longer than MAX_PIECE. A part ends where the regex
 * splits the whole text, after a piece holding a non-space: the regex then splits the part alone as
 * it splits it in context (its lookaheads `\s+(?!\S)` and `\s+$` differ only after spaces). A part
 * never ends inside a surrogate pair, so its tokens are at most its UTF-8 bytes.
 */
export function* countParts(text: string, name: TokenizerName): Generator<Part, void> {
  const t = tokenizer(name);
  for (let at = 0, units = FIRST_PART_UNITS; at < text.length; units = Math.min(2 * units, PART_UNITS)) {
    const end = plainPartEnd(text, at, units);
    if (end < 0) {
      at = yield* countPieces(text, at, t, units);
    } else {
      yield [t.count(end - at === text.length ? text : text.slice(at, end)), end];
      at = end;
    }
  }
}

/**
 * The end of a plain part from `start`: at least `units` long, ending before a space or tab that
 * follows a non-space (no piece spans that), or at the end of the text; -1 when a run of LONG_RUN
 * spaces or non-spaces comes first, or no such end comes within 2 × `units`.
 */
function plainPartEnd(text: string, start: number, units: number): number {
  const limit = Math.min(text.length, start + 2 * units);
  let run = 0;
  let runOfSpaces = false;
  for (let i = start; i < limit; i++) {
    const code = text.charCodeAt(i);
    const space = isSpace(code);
    if (space !== runOfSpaces) {
      if (space && run > 0 && i - start >= units && (code === 0x20 || code === 0x09)) return i;
      runOfSpaces = space;
      run = 0;
    }
    if (++run >= LONG_RUN) return -1;
  }
  return limit === text.length ? limit : -1;
}

/**
 * Counts the regex's pieces over one window from `start`, a piece boundary, and returns where it
 * stopped. A piece the window gives that starts over MAX_PIECE units before the window's end is the
 * piece the whole text gives, unless that one is longer than MAX_PIECE: the regex only sees past the
 * window's end by matching up to it. Pieces longer than MAX_PIECE are counted in chunks.
 */
function* countPieces(text: string, start: number, t: Tokenizer, units: number): Generator<Part, number> {
  let end = Math.min(start + WINDOW_UNITS, text.length);
  if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
  const trusted = end === text.length ? end : end - MAX_PIECE;
  const window = text.slice(start, end);
  const re = new RegExp(t.pieces); // its own lastIndex: counts interleave
  let partStart = start;
  let cut = start; // the end of the last piece holding a non-space
  let next = start;
  for (let m = re.exec(window); m !== null && start + m.index < trusted; m = re.exec(window)) {
    const piece = m[0];
    const pieceEnd = (next = start + re.lastIndex);
    if (piece.length === 0) {
      re.lastIndex++; // no split regex matches "", but never loop on one
    } else if (piece.length > MAX_PIECE) {
      const pieceStart = pieceEnd - piece.length;
      if (pieceStart > partStart) yield [t.count(text.slice(partStart, pieceStart)), pieceStart];
      yield* countLongPiece(piece, pieceStart, t);
      partStart = cut = pieceEnd;
    } else if (!isSpace(piece.charCodeAt(0)) || (piece.length > 1 && !isSpace(piece.charCodeAt(1)))) {
      // every piece shape but spaces alone (" word", " !!", "}\n", "123") has a non-space in its first two units
      cut = pieceEnd;
      if (cut - partStart >= units) {
        yield [t.count(text.slice(partStart, cut)), cut];
        partStart = cut;
      }
    }
  }
  if (cut === start) cut = next > start ? next : trusted; // spaces alone: never stall
  if (cut > partStart) yield [t.count(text.slice(partStart, cut)), cut];
  return cut;
}

/** A piece too long for BPE (at `offset` in its text) counted in MAX_PIECE-unit chunks, never
 *  splitting a surrogate pair. */
function* countLongPiece(piece: string, offset: number, t: Tokenizer): Generator<Part, void> {
  let sum = 0;
  let done = 0;
  for (let at = 0; at < piece.length; ) {
    let end = Math.min(at + MAX_PIECE, piece.length);
    if (end < piece.length && isHighSurrogate(piece.charCodeAt(end - 1))) end--;
    sum += t.count(piece.slice(at, end));
    at = end;
    if (at - done >= PART_UNITS) {
      yield [sum, offset + at];
      sum = 0;
      done = at;
    }
  }
  if (sum > 0) yield [sum, offset + piece.length];
}

/** `\s` of a regex: ASCII spaces and Unicode's Zs, line and paragraph separators and the BOM. */
function isSpace(code: number): boolean {
  if (code < 0x80) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  return (
    code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 ||
    code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff
  );
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

export function createPacer(sliceMs = SLICE_MS): Pacer {
  let sliceStart = performance.now();
  return {
    due() {
      if (performance.now() - sliceStart < sliceMs) return undefined;
      return nextTurn().then(() => {
        sliceStart = performance.now();
      });
    },
  };
}

export function countText(text: string, tokenizer: TokenizerName = "cl100k_base"): number {
  let total = 0;
  for (const [n] of countParts(text, tokenizer)) total += n;
  return total;
}

/**
 * countText that yields to the event loop between slices of work, and stops once the running total
 * exceeds `stopAbove` (returning that partial total, which is then a lower bound).
 */
export async function countTextAsync(text: string, tokenizer: TokenizerName = "cl100k_base", opts: CountOptions = {}): Promise<number> {
  const { stopAbove = Number.POSITIVE_INFINITY, pacer = createPacer() } = opts;
  if (stopAbove < 0) return 0;
  let total = 0;
  for (const [n] of countParts(text, tokenizer)) {
    total += n;
    if (total > stopAbove) return total;
    const due = pacer.due();
    if (due) await due;
  }
  return total;
}

/** The text of a message's content: a string, or the text parts of a multi-part content. */
export function messageText(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!content) return "";
  if (content instanceof RawText) return content.text();
  let text = "";
  for (const part of content) {
    const value = part.type === "text" ? part.text : part.type === "refusal" && typeof part.refusal === "string" ? part.refusal : undefined;
    if (value !== undefined) text += (text ? "\n" : "") + value;
  }
  return text;
}

/** The worst-case tokens of a message's parts that are not text: images, audio and files cost what
 *  the model declares they may take, whatever their bytes (docs/api.md#limits). */
export function partTokens(message: ChatMessage, costs: PartCosts | undefined): number {
  const { content } = message;
  if (!costs || !Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content as ReadonlyArray<{ type: string }>) total += costs[part.type] ?? 0;
  return total;
}

/** The text of the last user message; "" when there is none. */
export function lastUserText(messages: ChatMessage[]): string {
  const last = messages.findLast((m) => m.role === "user");
  return last ? messageText(last.content) : "";
}

/** What countMessage counts: role + "\n" + content, trimmed; an assistant's tool calls (name and
 *  arguments) too, which the model reads as part of the prompt. */
export function countedText(message: ChatMessage): string {
  const text = `${message.role}\n${messageText(message.content)}`.trim();
  return message.tool_calls === undefined ? text : text + toolCallsText(message.tool_calls);
}

/** The names and arguments of a message's tool calls, one per line ("" for none). */
function toolCallsText(calls: unknown): string {
  if (!Array.isArray(calls)) return "";
  let text = "";
  for (const call of calls as Array<{ function?: { name?: unknown; arguments?: unknown } } | null>) {
    const f = call?.function;
    if (f) text += `\n${typeof f.name === "string" ? f.name : ""}\n${typeof f.arguments === "string" ? f.arguments : ""}`;
  }
  return text;
}

/** `tokens(role + "\n" + content, trimmed) + 4`. */
export function countMessage(message: ChatMessage, tokenizer: TokenizerName = "cl100k_base"): number {
  return countText(countedText(message), tokenizer) + MESSAGE_OVERHEAD;
}

/** An upper bound of countMessage (with its parts' worst case) that costs one byte-length pass. */
export function boundMessage(message: ChatMessage, costs?: PartCosts): number {
  const { content } = message;
  const bytes = content instanceof RawText ? content.bytes : Buffer.byteLength(messageText(content), "utf8");
  const calls = message.tool_calls === undefined ? 0 : Buffer.byteLength(toolCallsText(message.tool_calls), "utf8");
  return bytes + calls + message.role.length + 1 + MESSAGE_OVERHEAD + partTokens(message, costs);
}

export function countMessages(messages: ChatMessage[], tokenizer: TokenizerName = "cl100k_base"): number {
  let total = 0;
  for (const m of messages) total += countMessage(m, tokenizer);
  return total;
}
