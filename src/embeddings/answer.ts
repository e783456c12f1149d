// An embeddings answer kept as the upstream's bytes (docs/api.md#embeddings: the
// upstream's answer with `usage` set). Its vectors — hundreds of KB of floats for a batch — are never parsed nor serialized
// again: one pass over the top level checks the shape (an object whose `data` holds one object per
// input) and finds the `usage` and `model` values, the only parts parsed; the answer then goes out
// as the same bytes with the gateway's `usage` (and a `model` when it had none) put in their place.
import { CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, JsonScanner, OPEN_BRACE, OPEN_BRACKET, QUOTE, skipSpace } from "../json/scan.js";
import { answerNames } from "../stream/chunk.js";

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

/**
 * The answer's layout, or undefined when it is not a JSON object whose `data` is an array of
 * `inputs` objects. Values other than `usage` and `model` are skipped, not checked.
 */
export function scanEmbeddings(bytes: Buffer, inputs: number): EmbeddingsAnswer | undefined {
  const scan = new JsonScanner(bytes);
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
    const keyEnd = scan.string(i, false);
    if (keyEnd < 0) return undefined;
    const key = keyEnd - i <= 7 ? bytes.toString("latin1", i + 1, keyEnd - 1) : "";
    i = skipSpace(bytes, keyEnd);
    if (bytes[i] !== COLON) return undefined;
    const start = skipSpace(bytes, i + 1);
    // a repeated key would be sent twice: one of them with the upstream's value
    if (key === "data") {
      if (count >= 0) return undefined;
      [count, i] = countObjects(bytes, start, scan);
    } else {
      i = scan.skip(start);
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

/** The model the answer names, when it names one as a string (docs/tracing.md#spans). */
export function answerModel(answer: EmbeddingsAnswer): string | undefined {
  if (!answer.namesModel || answer.bytes[answer.model!.start] !== QUOTE) return undefined;
  try {
    return answerNames({ model: JSON.parse(answer.bytes.toString("utf8", answer.model!.start, answer.model!.end)) }).model;
  } catch {
    return undefined;
  }
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
function countObjects(bytes: Buffer, at: number, scan: JsonScanner): [number, number] {
  if (bytes[at] !== OPEN_BRACKET) return [0, -1];
  let i = skipSpace(bytes, at + 1);
  if (bytes[i] === CLOSE_BRACKET) return [0, i + 1];
  for (let count = 1; ; count++) {
    if (bytes[i] !== OPEN_BRACE) return [0, -1];
    i = scan.skip(i);
    if (i < 0) return [0, -1];
    i = skipSpace(bytes, i);
    if (bytes[i] === CLOSE_BRACKET) return [count, i + 1];
    if (bytes[i] !== COMMA) return [0, -1];
    i = skipSpace(bytes, i + 1);
  }
}

function isNull(bytes: Buffer, start: number, end: number): boolean {
  return end - start === 4 && bytes.toString("latin1", start, end) === "null";
}
