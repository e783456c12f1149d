// A kept stream redacted (docs/fastgpt.md#redaction): its SSE text as sent, each event's data read
// as a JSON body, and the texts its deltas make once joined — a secret sent a character an event (a
// model repeating its prompt does that) is no secret in any one event, only in the text they make:
// it is found there, and cut from every event it spans.
import { SECRET_MEMBER, applyEdits, eachScalar, redactJson } from "./body-json.js";
import { NOT_JSON, REDACTED, type Finder } from "./body-finder.js";

/** Members whose strings are pieces of a text streamed in deltas: Chat Completions' content,
 *  reasoning and tool arguments, Messages' text, thinking and JSON, Responses' deltas. */
const DELTA_MEMBERS = new Set(["content", "text", "reasoning_content", "reasoning", "refusal", "arguments", "partial_json", "thinking", "delta"]);
/** Members that tell the texts of one stream apart: a choice, a content block, a tool call, an output. */
const INDEX_MEMBER = /index$/i;
const DATA = "data:";

/** A delta: its value, and its string token's place in the text. */
interface Piece {
  value: string;
  start: number;
  end: number;
}

export function redactSse(text: string, finder: Finder, complete: boolean): string {
  // a stream with no escape that could hide a character and no secret-named member is its own
  // values: its deltas are read by one expression, and it is searched as text, in one pass
  const plain = !finder.escapes(text) && !SECRET_MEMBER.test(text);
  // 1. the deltas of each text: by member, and the indexes before them in their event
  const texts = plain ? plainDeltas(text) : parsedDeltas(text, finder, complete);
  // 2. a secret the pieces of a text make together (base64 too: the model's words are there, not in
  //    the rest of an event), cut from each piece it spans
  const edits: Array<[number, number, string]> = [];
  for (const pieces of texts.values()) if (plain || pieces.length > 1) acrossPieces(pieces, finder, edits);
  edits.sort((a, b) => a[0] - b[0]);
  const spliced = applyEdits(text, edits);
  if (plain) return finder.scrub(spliced, true);
  // 3. each event's data, redacted as a JSON body; the other lines as text
  let out = "";
  let at = 0;
  eachLine(spliced, (from, to, last) => {
    out += spliced.slice(at, from) + redactLine(spliced.slice(from, to), finder, complete || !last);
    at = to;
  });
  return out + spliced.slice(at);
}

type Texts = Map<string, Piece[]>;

function add(texts: Texts, member: string, tag: string, piece: Piece): void {
  const key = `${member}|${tag}`;
  const pieces = texts.get(key);
  if (pieces) pieces.push(piece);
  else texts.set(key, [piece]);
}

/** A delta member and its string, an index member and its number, or a line's end. */
const DELTA = new RegExp(`"(${[...DELTA_MEMBERS].join("|")}|[A-Za-z_]*index)"\\s*:\\s*(?:(-?\\d+)|"((?:[^"\\\\]|\\\\.)*)")|\\n`, "g");

/** The deltas of a stream whose bytes are its values. */
function plainDeltas(text: string): Texts {
  const texts: Texts = new Map();
  let tag = "";
  DELTA.lastIndex = 0;
  for (let m = DELTA.exec(text); m; m = DELTA.exec(text)) {
    if (m[0] === "\n") tag = "";
    else if (m[2] !== undefined) tag += `${m[1]}=${m[2]};`;
    else if (m[3] !== undefined && DELTA_MEMBERS.has(m[1]!)) {
      const end = m.index + m[0].length;
      add(texts, m[1]!, tag, { value: unescaped(m[3]), start: end - m[3].length - 2, end });
    }
  }
  return texts;
}

/** A string's value from between its quotes; as it is where an escape is not JSON's (the event is
 *  then not JSON, and is redacted as not JSON). */
function unescaped(raw: string): string {
  if (!raw.includes("\\")) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

/** The deltas of a stream read event by event, each event's data as JSON. */
function parsedDeltas(text: string, finder: Finder, complete: boolean): Texts {
  const texts: Texts = new Map();
  eachData(text, (from, to, last) => {
    let tag = "";
    eachScalar(text.slice(from, to), finder, complete || !last, (member, value, start, end) => {
      if (typeof value === "number") {
        if (INDEX_MEMBER.test(member)) tag += `${member}=${value};`;
      } else if (DELTA_MEMBERS.has(member)) add(texts, member, tag, { value, start: from + start, end: from + end });
    });
  });
  return texts;
}

function redactLine(line: string, finder: Finder, whole: boolean): string {
  if (!line.startsWith(DATA)) return finder.scrub(line);
  const data = line.slice(DATA.length);
  if (data.trim() === "[DONE]") return line;
  return DATA + (redactJson(data, finder, whole) ?? (whole ? ` ${NOT_JSON}` : ""));
}

/** Each piece a secret of the joined text overlaps, without the part it overlaps; `[redacted]`
 *  where the secret begins. */
function acrossPieces(pieces: Piece[], finder: Finder, edits: Array<[number, number, string]>): void {
  const spans = finder.spans(pieces.map((p) => p.value).join(""));
  if (spans.length === 0) return;
  let offset = 0;
  for (const piece of pieces) {
    const from = offset;
    const to = (offset += piece.value.length);
    let value = "";
    let at = from;
    let touched = false;
    for (const [start, end] of spans) {
      if (end <= from || start >= to) continue;
      touched = true;
      value += piece.value.slice(at - from, Math.max(start, from) - from) + (start >= from ? REDACTED : "");
      at = Math.min(end, to);
    }
    if (touched) edits.push([piece.start, piece.end, JSON.stringify(value + piece.value.slice(at - from))]);
  }
}

/** Each line's [from, to), its line end not included; `last`: no line end after it. */
function eachLine(text: string, visit: (from: number, to: number, last: boolean) => void): void {
  for (let from = 0; from <= text.length; ) {
    const end = text.indexOf("\n", from);
    const to = end < 0 ? text.length : end;
    visit(from, to > from && text.charCodeAt(to - 1) === 0x0d ? to - 1 : to, end < 0);
    if (end < 0) return;
    from = end + 1;
  }
}

/** Each data line's data: [from, to) after `data:`. */
function eachData(text: string, visit: (from: number, to: number, last: boolean) => void): void {
  eachLine(text, (from, to, last) => {
    if (text.startsWith(DATA, from) && text.slice(from + DATA.length, to).trim() !== "[DONE]") visit(from + DATA.length, to, last);
  });
}
