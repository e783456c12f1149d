// A large JSON document parsed in pieces, the event loop given back between them (docs/api.md#request-bounds):
// one JSON.parse of a few MB of small values is a block of tens to thousands of ms (2.7M `[]` in 8 MiB:
// 1.6 s), and a worker thread would hand the value back through a structured clone that costs as much
// again on the loop. Here a container's children are taken in runs of about PIECE_BYTES (found with
// the byte scanner: nextRun) and each run is parsed by JSON.parse, which checks it; a child
// larger than a run, or holding a long string, is walked into the same way. A long string is decoded
// in pieces too. What the parse builds is what JSON.parse builds, `keep` aside; a document JSON.parse
// refuses is refused (`JsonPieceError`), and so is one nested deeper than `maxDepth` or holding more
// than `maxValues` objects, arrays and strings (keys counted): a first walk (in pieces too, making
// nothing) counts them, so such a document is refused before any value is made. Millions of small
// objects alive, even made a piece at a time, cost the garbage collector pauses of hundreds of ms.
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, JsonScanner, OPEN_BRACE, OPEN_BRACKET, QUOTE, TOO_DEEP, skipSpace } from "./scan.js";

/** The bytes of the children JSON.parse reads at once: a fraction of a ms for any mix of values. */
export const PIECE_BYTES = 16 * 1024;
/** A string longer than this is decoded in pieces of this size. */
export const STRING_PIECE_BYTES = 256 * 1024;
/** The work done between two turns of the event loop, in ms. */
const SLICE_MS = 4;
const U = 0x75;

export type JsonPath = ReadonlyArray<string | number>;

/** A long string where it lies: its opening quote, the end after its closing one, the bytes its
 *  escapes save when decoded (0: none), and its text when it was decoded in pieces. */
export interface LongString {
  start: number;
  end: number;
  saved: number;
  text?: string;
}

export interface PieceOptions {
  maxDepth: number;
  maxValues: number;
  /** a string of this many bytes or more (between its quotes) is read on its own and shown to `keep` */
  longString: number;
  /** what stands for a long string at `path` (undefined: its text) */
  keep?: (path: JsonPath, string: LongString) => unknown;
  /** a turn of the event loop, awaited every few ms of work */
  turn: () => Promise<void>;
}

export class JsonPieceError extends Error {
  constructor(readonly reason: "invalid" | "tooDeep" | "tooMany") {
    super(reason);
  }
}

/** The document in `buf`, parsed in pieces with turns of the event loop between them. */
export async function parseInPieces(buf: Buffer, options: PieceOptions): Promise<unknown> {
  // each object, array or string takes two bytes at least: a shorter document needs no count
  if (buf.length / 2 > options.maxValues) await new PieceParse(buf, options, true).value(skipSpace(buf, 0), [], 0);
  const parse = new PieceParse(buf, { ...options, maxValues: Infinity }, false);
  const [value, end] = await parse.value(skipSpace(buf, 0), [], 0);
  if (skipSpace(buf, end) !== buf.length) throw invalid();
  return value;
}

const invalid = () => new JsonPieceError("invalid");

class PieceParse {
  readonly #scan: JsonScanner;
  #sliceStart = performance.now();
  #values = 0;

  constructor(
    private readonly buf: Buffer,
    private readonly options: PieceOptions,
    /** only walked and counted: nothing is made */
    private readonly dry: boolean,
  ) {
    this.#scan = new JsonScanner(buf);
  }

  /** The value at `at` (white space passed) inside `level` containers, and where it ends. */
  async value(at: number, path: JsonPath, level: number): Promise<[unknown, number]> {
    const c = this.buf[at];
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (level >= this.options.maxDepth) throw new JsonPieceError("tooDeep");
      this.#count(1);
      return this.#container(at, path, level + 1);
    }
    if (c === QUOTE) return this.#string(at, path);
    // a number or literal: only ever the whole document (a container's are parsed in its runs)
    const end = this.#scan.value(at);
    if (end < 0) throw invalid();
    return [this.dry ? undefined : parse(this.buf.toString("utf8", at, end)), end];
  }

  /** The array or object at `at`, the `level`th container: its children in runs, each big child on its own. */
  async #container(at: number, path: JsonPath, level: number): Promise<[unknown, number]> {
    const { buf } = this;
    const inObject = buf[at] === OPEN_BRACE;
    const close = inObject ? CLOSE_BRACE : CLOSE_BRACKET;
    const out: unknown[] | Record<string, unknown> = inObject ? {} : [];
    let i = skipSpace(buf, at + 1);
    if (buf[i] === close) return [out, i + 1];
    for (;;) {
      const run = nextRun(this.#scan, buf, i, inObject, PIECE_BYTES, this.options.longString, this.options.maxDepth - level);
      if (run === TOO_DEEP) throw new JsonPieceError("tooDeep");
      if (run === -1) throw invalid();
      this.#count(run.values);
      if (run.end > i) {
        if (!this.dry) {
          const text = buf.toString("utf8", i, run.end);
          addAll(out, parse(inObject ? `{${text}}` : `[${text}]`));
        }
        await this.#pause();
      } else if (!("big" in run)) {
        throw invalid(); // nothing between a comma and what follows it
      }
      if ("big" in run) {
        // only white space between the run's comma and the big child
        if (run.big !== (run.end > i ? skipSpace(buf, run.end + 1) : i) || (run.end > i && buf[run.end] !== COMMA)) throw invalid();
        i = await this.#child(out, run.big, path, level);
        if (buf[i] === close) return [out, i + 1];
        if (buf[i] !== COMMA) throw invalid();
      } else if (run.next === "close") {
        if (buf[run.end] !== close) throw invalid();
        return [out, run.end + 1];
      }
      i = skipSpace(buf, (("big" in run) ? i : run.end) + 1);
    }
  }

  /** A child of `out` read on its own (an object's member: its key too); where the white space after it ends. */
  async #child(out: unknown[] | Record<string, unknown>, at: number, path: JsonPath, level: number): Promise<number> {
    const { buf } = this;
    if (Array.isArray(out)) {
      const [value, end] = await this.value(at, [...path, out.length], level);
      if (!this.dry) out.push(value);
      return skipSpace(buf, end);
    }
    if (buf[at] !== QUOTE) throw invalid();
    const [key, keyEnd] = await this.#string(at, undefined);
    const colon = skipSpace(buf, keyEnd);
    if (buf[colon] !== COLON) throw invalid();
    const [value, end] = await this.value(skipSpace(buf, colon + 1), [...path, key as string], level);
    if (!this.dry) setMember(out, key as string, value);
    return skipSpace(buf, end);
  }

  /** The string at `at` (`path`: where it lies as a value, not a key), checked as JSON.parse would. */
  async #string(at: number, path: JsonPath | undefined): Promise<[unknown, number]> {
    const { buf } = this;
    this.#count(1);
    // a count needs only where it ends: its bytes are checked by the parse that follows
    const end = this.#scan.string(at, !this.dry);
    if (end < 0) throw invalid();
    const saved = this.#scan.saved;
    if (this.dry) return [undefined, end];
    if (end - at - 2 < this.options.longString) return [parse(buf.toString("utf8", at, end)), end];
    const text = end - at > STRING_PIECE_BYTES ? await this.#decode(at, end, saved > 0) : undefined;
    const kept = path && this.options.keep?.(path, { start: at, end, saved, text });
    if (kept !== undefined) return [kept, end];
    return [text ?? parse(buf.toString("utf8", at, end)), end];
  }

  /** A long string's text, decoded a piece at a time: cut at UTF-8 character starts, never inside an escape. */
  async #decode(start: number, end: number, escaped: boolean): Promise<string> {
    const { buf } = this;
    const pieces: string[] = [];
    let escape = start + 1; // escapes before this are passed
    for (let from = start + 1; from < end - 1; ) {
      let to = Math.min(from + STRING_PIECE_BYTES, end - 1);
      while (to < end - 1 && (buf[to]! & 0xc0) === 0x80) to++;
      if (escaped) {
        for (;;) {
          const backslash = buf.indexOf(BACKSLASH, escape);
          if (backslash < 0 || backslash >= to) break;
          escape = backslash + (buf[backslash + 1] === U ? 6 : 2);
          if (escape > to) to = escape;
        }
      }
      pieces.push(escaped ? (parse(`"${buf.toString("utf8", from, to)}"`) as string) : buf.toString("utf8", from, to));
      from = to;
      await this.#pause();
    }
    return pieces.join("");
  }

  #count(values: number): void {
    this.#values += values;
    if (this.#values > this.options.maxValues) throw new JsonPieceError("tooMany");
  }

  /** A turn of the event loop once SLICE_MS of work has been done since the last. */
  async #pause(): Promise<void> {
    if (performance.now() - this.#sliceStart < SLICE_MS) return;
    await this.options.turn();
    this.#sliceStart = performance.now();
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw invalid();
  }
}

function addAll(out: unknown[] | Record<string, unknown>, run: unknown): void {
  if (Array.isArray(out)) {
    for (const value of run as unknown[]) out.push(value);
    return;
  }
  const members = run as Record<string, unknown>;
  for (const key of Object.keys(members)) setMember(out, key, members[key]);
}

/** As JSON.parse sets a member: `__proto__` too is an own property, not the object's prototype. */
function setMember(out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
  else out[key] = value;
}

/** A run of a container's children found by nextRun; `values`: the objects, arrays and strings
 *  (keys too) in it. */
type Run = { end: number; values: number } & ({ next: "comma" | "close" } | { big: number });

/**
 * A run of a container's children from `at` (the first byte of one, white space passed): the
 * children that end within `size` bytes of `at`, nest at most `maxDepth` deep and hold no string of
 * `long` bytes or more. It ends at a comma between children (`next: "comma"`), at the container's
 * closing bracket (`next: "close"`), or before a child that is none of those (`big`: where that
 * child, or its member's key, starts; `end`: the comma before it, or `at` when it is the first).
 * Only brackets and quotes are looked at (strings unchecked): what lies between is for JSON.parse to
 * judge. -1 when the container never closes.
 */
function nextRun(scan: JsonScanner, buf: Buffer, at: number, inObject: boolean, size: number, long: number, maxDepth: number): Run | -1 | typeof TOO_DEEP {
  const stop = at + size;
  let depth = 0;
  // the child being read (in an object, its key); from level0 on, the scan is between children
  let child = at;
  let level0 = at;
  // the values met, and those met before the child being read
  let values = 0;
  let before = 0;
  for (let i = at; ; ) {
    const pos = scan.structural(i);
    if (pos >= buf.length) return -1;
    // past the size: inside a child, that child is big; between children, a cut at the first comma
    // after the size, or the last before it
    if (pos > stop && depth > 0) return bigChild(buf, at, child, before);
    if (pos > stop) {
      const after = buf.indexOf(COMMA, Math.max(level0, stop));
      if (after >= 0 && after < pos) return { end: after, next: "comma", values };
      const last = level0 < stop ? buf.lastIndexOf(COMMA, stop - 1) : -1;
      if (last >= level0) return { end: last, next: "comma", values };
    }
    const c = buf[pos]!;
    if (c === QUOTE) {
      const end = scan.string(pos, false);
      if (end < 0) return -1;
      if (depth === 0 && (!inObject || buf[skipSpace(buf, end)] === COLON)) [child, before] = [pos, values];
      if (end - pos - 2 >= long) return bigChild(buf, at, child, before);
      values++;
      i = end;
      if (depth === 0) level0 = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === 0 && !inObject) [child, before] = [pos, values];
      if (++depth > maxDepth) return TOO_DEEP;
      values++;
      i = pos + 1;
    } else if (depth === 0) {
      return { end: pos, next: "close", values };
    } else {
      i = pos + 1;
      if (--depth === 0) level0 = i;
    }
  }
}

/** The run before the big child at `child`: up to the comma before it (the caller checks what lies
 *  between), or none when it is the first. */
function bigChild(buf: Buffer, at: number, child: number, values: number): Run {
  return { end: child === at ? at : Math.max(at, buf.lastIndexOf(COMMA, child - 1)), big: child, values };
}
