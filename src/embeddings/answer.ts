// An embeddings answer kept as the upstream's bytes (CONTRACTS §13: "the upstream's with usage
// forced"). Its vectors — hundreds of KB of floats for a batch — are never parsed nor serialized
// again: one pass over the top level checks the shape (an object whose `data` holds one object per
// input) and finds the `usage` and `model` values, the only parts parsed; the answer then goes out
// as the same bytes with the gateway's `usage` (and a `model` when it had none) put in their place.

/** Where a top-level value lies in the bytes: [start, end). */
interface Span {
  start: number;
  end: number;
}

export interface EmbeddingsAnswer {
  /** the answer's JSON, as the upstream sent it */
  bytes: Buffer;
  /** the upstream's own count of input tokens, when it gave a usable one */
  promptTokens?: number;
  /** the top-level `usage` value, when there is one */
  usage?: Span;
  /** the top-level `model` value, when there is one */
  model?: Span;
  /** whether `model` is there and not null */
  namesModel: boolean;
  /** where the top-level object's closing brace is */
  close: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * The answer's layout, or undefined when it is not a JSON object whose `data` is an array of
 * `inputs` objects. Values other than `usage` and `model` are skipped, not checked.
 */
export function scanEmbeddings(bytes: Buffer, inputs: number): EmbeddingsAnswer | undefined {
  const skip = new Skipper(bytes);
  let i = skipSpace(bytes, 0);
  if (bytes[i] !== OPEN_BRACE) return undefined;
  i = skipSpace(bytes, i + 1);
  let count = -1;
  let usage: Span | undefined;
  let model: Span | undefined;
  if (bytes[i] === CLOSE_BRACE) return undefined; // no data
  for (;;) {
    // a key and its value
    if (bytes[i] !== QUOTE) return undefined;
    const keyEnd = skip.string(i);
    if (keyEnd < 0) return undefined;
    const key = keyEnd - i <= 7 ? bytes.toString("latin1", i + 1, keyEnd - 1) : "";
    i = skipSpace(bytes, keyEnd);
    if (bytes[i] !== COLON) return undefined;
    const start = skipSpace(bytes, i + 1);
    // a repeated key would be sent twice: one of them with the upstream's value
    if (key === "data") {
      if (count >= 0) return undefined;
      [count, i] = countObjects(bytes, start, skip);
    } else {
      i = skip.value(start);
      if ((key === "usage" && usage) || (key === "model" && model)) return undefined;
      if (key === "usage") usage = { start, end: i };
      else if (key === "model") model = { start, end: i };
    }
    if (i < 0) return undefined;
    i = skipSpace(bytes, i);
    if (bytes[i] === COMMA) i = skipSpace(bytes, i + 1);
    else if (bytes[i] === CLOSE_BRACE) break;
    else return undefined;
  }
  if (count !== inputs || skipSpace(bytes, i + 1) !== bytes.length) return undefined;
  const answer: EmbeddingsAnswer = { bytes, usage, model, namesModel: !!model && !isNull(bytes, model.start, model.end), close: i };
  if (usage) answer.promptTokens = readPromptTokens(bytes, usage);
  return answer;
}

/** The answer's bytes with `usage` set to `tokens` (and `model` to `model` when it named none), as
 *  parts to write in order: the vectors are not copied. */
export function withUsage(answer: EmbeddingsAnswer, tokens: number, model: string): Buffer[] {
  const usage = Buffer.from(`{"prompt_tokens":${tokens},"total_tokens":${tokens}}`);
  // edits in the order they apply: a replaced value, or members added before the closing brace
  const edits: Array<{ span: Span; text: Buffer }> = [];
  const added: string[] = [];
  if (answer.usage) edits.push({ span: answer.usage, text: usage });
  else added.push(`"usage":${usage.toString("latin1")}`);
  if (answer.model && !answer.namesModel) edits.push({ span: answer.model, text: Buffer.from(JSON.stringify(model)) });
  else if (!answer.model) added.push(`"model":${JSON.stringify(model)}`);
  if (added.length > 0) edits.push({ span: { start: answer.close, end: answer.close }, text: Buffer.from(`,${added.join(",")}`) });
  edits.sort((a, b) => a.span.start - b.span.start);

  const parts: Buffer[] = [];
  let at = 0;
  for (const { span, text } of edits) {
    parts.push(answer.bytes.subarray(at, span.start), text);
    at = span.end;
  }
  parts.push(answer.bytes.subarray(at));
  return parts;
}

function readPromptTokens(bytes: Buffer, span: Span): number | undefined {
  let usage: unknown;
  try {
    usage = JSON.parse(bytes.toString("utf8", span.start, span.end));
  } catch {
    return undefined;
  }
  const tokens = (usage as { prompt_tokens?: unknown } | null)?.prompt_tokens;
  return typeof tokens === "number" && Number.isFinite(tokens) && tokens >= 0 ? tokens : undefined;
}

/** [number of elements, end] of the array at `at`, each element an object; end -1 when it is not. */
function countObjects(bytes: Buffer, at: number, skip: Skipper): [number, number] {
  if (bytes[at] !== OPEN_BRACKET) return [0, -1];
  let i = skipSpace(bytes, at + 1);
  if (bytes[i] === CLOSE_BRACKET) return [0, i + 1];
  for (let count = 1; ; count++) {
    if (bytes[i] !== OPEN_BRACE) return [0, -1];
    i = skip.nested(i);
    if (i < 0) return [0, -1];
    i = skipSpace(bytes, i);
    if (bytes[i] === CLOSE_BRACKET) return [count, i + 1];
    if (bytes[i] !== COMMA) return [0, -1];
    i = skipSpace(bytes, i + 1);
  }
}

/**
 * Skips values without looking at every byte: it jumps from one quote or bracket to the next with
 * Buffer#indexOf (memchr). The next position of each of those five bytes is remembered, and the
 * scan only moves forward, so each is searched for once over the whole answer.
 */
class Skipper {
  // next position at or after the scan of: quote, {, [, }, ] (bytes.length: none left)
  readonly #next = [-1, -1, -1, -1, -1];

  constructor(private readonly bytes: Buffer) {}

  /** The end of the value at `at`; -1 when it does not end. */
  value(at: number): number {
    const c = this.bytes[at];
    if (c === QUOTE) return this.string(at);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) return this.nested(at);
    // a number, true, false or null: up to the next delimiter
    let i = at;
    while (i < this.bytes.length) {
      const d = this.bytes[i]!;
      if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isSpace(d)) break;
      i++;
    }
    return i === at ? -1 : i;
  }

  /** The end of the object or array at `at` (brackets counted, strings skipped); -1 when it does not end. */
  nested(at: number): number {
    let depth = 0;
    let i = at;
    for (;;) {
      // the nearest of the five
      let kind = 0;
      let pos = this.#find(0, i);
      for (let k = 1; k < 5; k++) {
        const p = this.#find(k, i);
        if (p < pos) [kind, pos] = [k, p];
      }
      if (pos >= this.bytes.length) return -1;
      if (kind === 0) {
        i = this.string(pos);
        if (i < 0) return -1;
      } else if (kind <= 2) {
        depth++;
        i = pos + 1;
      } else {
        i = pos + 1;
        if (--depth === 0) return i;
      }
    }
  }

  /** The end of the string whose opening quote is at `at`; -1 when it does not end. */
  string(at: number): number {
    let i = at + 1;
    for (;;) {
      i = this.#find(0, i);
      if (i >= this.bytes.length) return -1;
      // escaped when an odd number of backslashes come before it
      let slashes = 0;
      while (this.bytes[i - 1 - slashes] === BACKSLASH) slashes++;
      if (slashes % 2 === 0) return i + 1;
      i++;
    }
  }

  #find(kind: number, from: number): number {
    const next = this.#next;
    if (next[kind]! < from) {
      const at = this.bytes.indexOf(STRUCTURAL[kind]!, from);
      next[kind] = at < 0 ? this.bytes.length : at;
    }
    return next[kind]!;
  }
}

const STRUCTURAL = [QUOTE, OPEN_BRACE, OPEN_BRACKET, CLOSE_BRACE, CLOSE_BRACKET];

function skipSpace(bytes: Buffer, at: number): number {
  let i = at;
  while (i < bytes.length && isSpace(bytes[i]!)) i++;
  return i;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isNull(bytes: Buffer, start: number, end: number): boolean {
  return end - start === 4 && bytes.toString("latin1", start, end) === "null";
}
