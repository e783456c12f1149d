// The members of a JSON object and the items of a JSON array in a Buffer, as spans of bytes: what a
// reader needs to pick one value out of a large document without parsing the rest (src/json/scan.ts
// finds where each value ends). The document is trusted to be JSON (made by JSON.stringify): a
// malformed one ends the walk early.
import { CLOSE_BRACKET, COLON, COMMA, JsonScanner, OPEN_BRACE, OPEN_BRACKET, QUOTE, skipSpace } from "./scan.js";

export interface Span {
  start: number;
  end: number;
}

/** The members of the object whose `{` is at `at`: each key (decoded) and its value's span. */
export function* members(buf: Buffer, at: number, scan = new JsonScanner(buf)): Generator<{ key: string } & Span> {
  if (buf[at] !== OPEN_BRACE) return;
  let i = skipSpace(buf, at + 1);
  while (buf[i] === QUOTE) {
    const keyEnd = scan.string(i, false);
    if (keyEnd < 0) return;
    const key = JSON.parse(buf.toString("utf8", i, keyEnd)) as string;
    i = skipSpace(buf, keyEnd);
    if (buf[i] !== COLON) return;
    const start = skipSpace(buf, i + 1);
    const end = scan.skip(start);
    if (end < 0) return;
    yield { key, start, end };
    i = skipSpace(buf, end);
    if (buf[i] !== COMMA) return;
    i = skipSpace(buf, i + 1);
  }
}

/** The items of the array whose `[` is at `at`, as spans. */
export function* items(buf: Buffer, at: number, scan = new JsonScanner(buf)): Generator<Span> {
  if (buf[at] !== OPEN_BRACKET) return;
  let i = skipSpace(buf, at + 1);
  while (i < buf.length && buf[i] !== CLOSE_BRACKET) {
    const end = scan.skip(i);
    if (end < 0) return;
    yield { start: i, end };
    i = skipSpace(buf, end);
    if (buf[i] !== COMMA) return;
    i = skipSpace(buf, i + 1);
  }
}

/** The value of a span, parsed. */
export function valueOf(buf: Buffer, span: Span): unknown {
  return JSON.parse(buf.toString("utf8", span.start, span.end));
}
