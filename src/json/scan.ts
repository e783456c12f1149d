// The one JSON byte scanner: where white space, a string or a value ends in a Buffer, the bytes a
// string's escapes save when decoded, and how deep brackets nest, without making JavaScript strings
// of the bytes. Large request bodies and upstream answers are read with it (json/slices.ts,
// http/body.ts, embeddings/answer.ts, chat/sse-relay.ts), so it stays fast on long texts: quotes,
// backslashes and brackets beyond the next few bytes are found by Buffer#indexOf (memchr), each
// searched for once while a scan moves forward; a string's control bytes are checked four at a
// time; a string dense with escapes is read byte by byte instead. It imports nothing from the project.

// JSON's structural bytes
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
const U = 0x75;

/** What value() answers for brackets nested deeper than its limit. */
export const TOO_DEEP = -2;

/** JSON's white space: space, tab, line feed, carriage return. */
export function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The first position at or after `at` that is not white space (buf.length: none). */
export function skipSpace(buf: Buffer, at: number): number {
  let i = at;
  while (i < buf.length && isSpace(buf[i])) i++;
  return i;
}

// the bytes #next remembers, by index
const SEARCHED = [QUOTE, BACKSLASH, OPEN_BRACE, OPEN_BRACKET, CLOSE_BRACE, CLOSE_BRACKET];
const Q = 0;
const B = 1;

/**
 * Scans of one buffer. It remembers where the next quote, backslash and bracket are: scans that move
 * forward search for each once (one going back makes it search again).
 */
export class JsonScanner {
  /** The bytes the escapes of the last string() save when decoded: its UTF-8 text is
   *  end - at - 2 - saved bytes long (0: it has no escape). */
  saved = 0;
  readonly #buf: Buffer;
  // next position at or after the scan of each SEARCHED byte (buf.length: none left; -1: not searched)
  readonly #next = [-1, -1, -1, -1, -1, -1];
  #from = 0;
  // the buffer's whole memory, four bytes at a time (made on first need)
  #words: Uint32Array | undefined;

  constructor(buf: Buffer) {
    this.#buf = buf;
  }

  /**
   * The end (after the closing quote) of the string whose opening quote is at `at`; -1 when it does
   * not end or, if `check`, holds a bad escape or a raw control byte. Unchecked, it ends where a
   * checked one would, wherever that is, and `saved` is not counted.
   */
  string(at: number, check = true): number {
    const buf = this.#buf;
    this.saved = 0;
    let p = at + 1;
    if (!check) {
      // a quote after anything but a backslash ends it: no search for backslashes (a vector's worth)
      const quote = this.#find(Q, p);
      if (quote >= buf.length) return -1;
      if (buf[quote - 1] !== BACKSLASH) return quote + 1;
    }
    for (let escapes = 0; ; escapes++) {
      const quote = this.#find(Q, p);
      if (quote >= buf.length) return -1;
      const backslash = this.#find(B, p);
      if (backslash > quote) return check && this.#hasControlByte(at + 1, quote) ? -1 : quote + 1;
      if (escapes > 32 && escapes * 16 > p - at) {
        if (check && this.#hasControlByte(at + 1, p)) return -1;
        return this.#bytewise(p, check);
      }
      const length = this.#escape(backslash);
      if (length < 0 && check) return -1;
      p = backslash + Math.abs(length);
    }
  }

  /**
   * The end of the JSON value at `at`, every byte of it checked as JSON.parse would; -1 when there
   * is none, TOO_DEEP when its arrays and objects nest deeper than `maxDepth`.
   */
  value(at: number, maxDepth = Infinity): number {
    const buf = this.#buf;
    const open: number[] = [];
    let i = at;
    for (;;) {
      // a value at i
      const c = buf[i];
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (open.length >= maxDepth) return TOO_DEEP;
        open.push(c);
        i = skipSpace(buf, i + 1);
        if (buf[i] === c + 2) {
          open.pop(); // {} or [] ('}' and ']' are two after their openers)
          i++;
        } else {
          if (c === OPEN_BRACE && (i = this.#key(i)) < 0) return -1;
          continue;
        }
      } else {
        i = c === QUOTE ? this.string(i) : scalarEnd(buf, i);
        if (i < 0) return -1;
      }
      // after a value: the containers it closes, then a comma and the next one
      for (;;) {
        if (open.length === 0) return i;
        i = skipSpace(buf, i);
        const top = open[open.length - 1]!;
        if (buf[i] === COMMA) {
          i = skipSpace(buf, i + 1);
          if (top === OPEN_BRACE && (i = this.#key(i)) < 0) return -1;
          break;
        }
        if (buf[i] !== top + 2) return -1;
        open.pop();
        i++;
      }
    }
  }

  /**
   * The end of the value at `at` without checking what is inside an object, array or string: their
   * brackets are counted and strings passed by memchr. -1 when it does not end. For bulk bytes
   * passed on unread (an embeddings answer's vectors).
   */
  skip(at: number): number {
    const c = this.#buf[at];
    if (c === QUOTE) return this.string(at, false);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) return this.#brackets(at, Infinity, false);
    return scalarEnd(this.#buf, at);
  }

  /** True when brackets anywhere in the buffer nest deeper than `max` (strings passed, nothing
   *  else checked): refused before parsing, no later step can overflow the stack on it. */
  nestingExceeds(max: number): boolean {
    return this.#brackets(0, max, true) === TOO_DEEP;
  }

  /** From `at`, brackets counted and strings passed unchecked, up to where the bracket at `at` closes
   *  (`whole`: the buffer's end, -1 after it never closes); TOO_DEEP past `max`. */
  #brackets(at: number, max: number, whole: boolean): number {
    const buf = this.#buf;
    let depth = 0;
    for (let i = at; ; ) {
      const pos = this.structural(i);
      if (pos >= buf.length) return whole ? buf.length : -1;
      const c = buf[pos]!;
      if (c === QUOTE) {
        i = this.string(pos, false);
        if (i < 0) return whole ? buf.length : -1;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (++depth > max) return TOO_DEEP;
        i = pos + 1;
      } else {
        i = pos + 1;
        if (--depth === 0 && !whole) return i;
      }
    }
  }

  /** After an object's `{` or `,` (and white space): past its key, colon and white space; -1 if none. */
  #key(at: number): number {
    const buf = this.#buf;
    if (buf[at] !== QUOTE) return -1;
    const end = this.string(at);
    if (end < 0) return -1;
    const colon = skipSpace(buf, end);
    return buf[colon] === COLON ? skipSpace(buf, colon + 1) : -1;
  }

  /** The nearest quote or bracket at or after `from` (buf.length: none): the next few bytes are
   *  read (in dense JSON it is one of them), then each of the five is searched for. */
  structural(from: number): number {
    const buf = this.#buf;
    const near = Math.min(from + 16, buf.length);
    for (let i = from; i < near; i++) if (STRUCTURAL[buf[i]!] === 1) return i;
    let pos = this.#find(Q, near);
    for (let k = 2; k < SEARCHED.length; k++) pos = Math.min(pos, this.#find(k, near));
    return pos;
  }

  #find(k: number, from: number): number {
    const next = this.#next;
    // a scan gone back: what is remembered holds only from where the searches were made
    if (from < this.#from) next.fill(-1);
    this.#from = from;
    if (next[k]! < from) {
      const at = this.#buf.indexOf(SEARCHED[k]!, from);
      next[k] = at < 0 ? this.#buf.length : at;
    }
    return next[k]!;
  }

  /** The rest of a string from `from`, a byte at a time (see string()). */
  #bytewise(from: number, check: boolean): number {
    const buf = this.#buf;
    for (let i = from; i < buf.length; ) {
      const c = buf[i]!;
      if (c === QUOTE) return i + 1;
      if (c === BACKSLASH) {
        const length = this.#escape(i);
        if (length < 0 && check) return -1;
        i += Math.abs(length);
      } else {
        if (c < 0x20 && check) return -1;
        i++;
      }
    }
    return -1;
  }

  /** The length of the escape at `at` (a backslash), adding what it saves to `saved`; a bad one is
   *  -2: unchecked scans pass it as the backslash and the byte after. */
  #escape(at: number): number {
    const buf = this.#buf;
    const c = buf[at + 1];
    if (c !== U) {
      if (c === undefined || SIMPLE_ESCAPE[c] !== 1) return -2;
      this.saved += 1;
      return 2;
    }
    const unit = hex4(buf, at + 2);
    if (unit < 0) return -2;
    // a surrogate pair is 12 bytes escaped, 4 in UTF-8; a lone surrogate is written as 3 (U+FFFD)
    if (unit >= 0xd800 && unit < 0xdc00 && buf[at + 6] === BACKSLASH && buf[at + 7] === U) {
      const low = hex4(buf, at + 8);
      if (low >= 0xdc00 && low < 0xe000) {
        this.saved += 8;
        return 12;
      }
    }
    this.saved += 6 - (unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3);
    return 6;
  }

  /** True when a byte below 0x20 (not allowed raw in a JSON string) lies in [from, to): four at a
   *  time through a view of the buffer's whole memory. */
  #hasControlByte(from: number, to: number): boolean {
    const buf = this.#buf;
    const offset = buf.byteOffset;
    let i = from;
    while (i < to && ((offset + i) & 3) !== 0) if (buf[i++]! < 0x20) return true;
    const stop = (offset + to) >>> 2;
    if (stop > (offset + i) >>> 2) {
      const words = (this.#words ??= new Uint32Array(buf.buffer, 0, buf.buffer.byteLength >>> 2));
      for (let w = (offset + i) >>> 2; w < stop; w++) {
        const x = words[w]!;
        // non-zero exactly when some byte of x is below 0x20
        if (((x - 0x20202020) & ~x & 0x80808080) !== 0) return true;
      }
    }
    for (i = Math.max(i, stop * 4 - offset); i < to; i++) if (buf[i]! < 0x20) return true;
    return false;
  }
}

const STRUCTURAL = new Uint8Array(256);
for (const c of [QUOTE, OPEN_BRACE, OPEN_BRACKET, CLOSE_BRACE, CLOSE_BRACKET]) STRUCTURAL[c] = 1;
const SIMPLE_ESCAPE = new Uint8Array(256);
for (const ch of '"\\/bfnrt') SIMPLE_ESCAPE[ch.charCodeAt(0)] = 1;

/** The four hex digits at `at` as a number; -1 if they are not four hex digits. */
function hex4(buf: Buffer, at: number): number {
  let unit = 0;
  for (let i = at; i < at + 4; i++) {
    const c = buf[i];
    const digit = c === undefined ? -1 : c >= 0x30 && c <= 0x39 ? c - 0x30 : (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66 ? (c | 0x20) - 0x57 : -1;
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

const LITERALS = [Buffer.from("true"), Buffer.from("false"), Buffer.from("null")];

/** The end of the number, true, false or null at `at`; -1 when there is none. */
function scalarEnd(buf: Buffer, at: number): number {
  const c = buf[at];
  if (c === 0x74 || c === 0x66 || c === 0x6e) {
    const word = LITERALS[c === 0x74 ? 0 : c === 0x66 ? 1 : 2]!;
    return buf.length - at >= word.length && buf.compare(word, 0, word.length, at, at + word.length) === 0 ? at + word.length : -1;
  }
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  let i = c === 0x2d ? at + 1 : at;
  if (buf[i] === 0x30) i++;
  else if (isDigit(buf[i])) i = digitsEnd(buf, i);
  else return -1;
  if (buf[i] === 0x2e) {
    if (!isDigit(buf[i + 1])) return -1;
    i = digitsEnd(buf, i + 1);
  }
  if (buf[i] === 0x65 || buf[i] === 0x45) {
    if (buf[i + 1] === 0x2b || buf[i + 1] === 0x2d) i++;
    if (!isDigit(buf[i + 1])) return -1;
    i = digitsEnd(buf, i + 1);
  }
  return i;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

function digitsEnd(buf: Buffer, at: number): number {
  let i = at;
  while (isDigit(buf[i])) i++;
  return i;
}
