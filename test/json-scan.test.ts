// The one JSON byte scanner (src/json/scan.ts) against JSON.parse, on a seeded corpus: nested
// objects and arrays, numbers in every form, strings with every escape (surrogate pairs and lone
// surrogates too), CJK and emoji, raw control bytes, truncations at every offset, garbage bytes.
// The scanner accepts exactly what JSON.parse accepts, every value ends where JSON.parse's ends,
// a string's byte length is Buffer.byteLength of its parsed text, and nesting depths agree.
import { isUtf8 } from "node:buffer";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { parseLarge } from "../src/http/body.js";
import { LONG_TEXT } from "../src/json/raw-text.js";
import { JsonScanner, TOO_DEEP, skipSpace } from "../src/json/scan.js";
import { seeded } from "./support/text-corpus.js";

type Rnd = (n: number) => number;
const pick = <T>(rnd: Rnd, xs: readonly T[]): T => xs[rnd(xs.length)]!;
const digits = (rnd: Rnd, n: number) => Array.from({ length: n }, () => String(rnd(10))).join("");
const hex = (n: number, upper: boolean) => (upper ? n.toString(16).toUpperCase() : n.toString(16)).padStart(4, "0");

const SPACES = [" ", "\t", "\n", "\r", "  ", "\r\n", "\n    "];
/** not white space to JSON: each refused outside a string */
const NOT_SPACES = ["\f", "\v", "\u00a0", "\u3000", "\u2028", "\ufeff"];
const BAD_NUMBERS = ["01", "-01", "00", "1.", ".5", "+1", "-", "1e", "1e+", "1E-", "--1", "0x1F", "NaN", "Infinity", "-Infinity", "1.e3", "1e1.5", "1_000", "٣", "0.-1", "-.5", "1ee2"];
const BAD_PIECES = ["\\x41", "\\U0041", "\\u12", "\\u12g4", "\\uXYZW", "\\'", "\\a", "\\0", "\\\n", "\\ ", "\\u{41}"];

function space(rnd: Rnd): string {
  return rnd(3) === 0 ? pick(rnd, SPACES) : "";
}

function number(rnd: Rnd): string {
  if (rnd(25) === 0) return pick(rnd, BAD_NUMBERS);
  const int = pick(rnd, ["0", String(1 + rnd(9)), String(1 + rnd(9)) + digits(rnd, 1 + rnd(18))]);
  const fraction = rnd(2) ? "" : `.${digits(rnd, 1 + rnd(8))}`;
  const exponent = rnd(3) ? "" : pick(rnd, ["e", "E"]) + pick(rnd, ["", "+", "-"]) + digits(rnd, 1 + rnd(4));
  return (rnd(3) ? "" : "-") + int + fraction + exponent;
}

/** One piece of a string's inside, as written in JSON. */
function piece(rnd: Rnd): string {
  switch (rnd(12)) {
    case 0:
      return pick(rnd, ["hello", "a b", "x", "Quick brown fox", "{[:,]}", "'single'", "/path/"]);
    case 1:
      return pick(rnd, ["中文字符", "日本語です。", "한국어", "café", "naïve", "Ω≈ç√", "\u2028\u2029", "\u007f"]);
    case 2:
      return pick(rnd, ["😀", "👨‍👩‍👧", "🇯🇵", "👍🏽", "𝄞"]);
    case 3:
    case 4:
      return pick(rnd, ['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]);
    case 5: {
      // any BMP unit but a surrogate, upper or lower case hex
      const unit = rnd(0xd800 + (0xffff - 0xdfff));
      return `\\u${hex(unit < 0xd800 ? unit : unit + 0x800, rnd(2) === 0)}`;
    }
    case 6: {
      // an escaped surrogate pair
      const point = 0x10000 + rnd(0x100000);
      const upper = rnd(2) === 0;
      return `\\u${hex(0xd800 + ((point - 0x10000) >> 10), upper)}\\u${hex(0xdc00 + ((point - 0x10000) & 0x3ff), upper)}`;
    }
    case 7:
      // lone surrogates: a high alone, a low alone, a high before a pair, a high before another escape
      return pick(rnd, ["\\ud800", "\\uDBFF", "\\udc00", "\\uDFFF", "\\uD83D\\uD83D\\uDE00", "\\ud800\\u0041", "\\uDE00\\uD83D", "\\ud83d😀"]);
    case 8:
      return `\\u00${hex(rnd(0x80), false).slice(2)}`;
    case 9:
      return rnd(20) === 0 ? String.fromCharCode(rnd(0x20)) : "plain";
    case 10:
      return rnd(20) === 0 ? pick(rnd, BAD_PIECES) : "\\n";
    default:
      return String.fromCharCode(0x20 + rnd(0x5f)).replace(/["\\]/, "");
  }
}

function string(rnd: Rnd): string {
  const n = rnd(4) === 0 ? 0 : 1 + rnd(8);
  return `"${Array.from({ length: n }, () => piece(rnd)).join("")}"`;
}

/** A piece with neither a raw control byte nor a bad escape. */
function validPiece(rnd: Rnd): string {
  for (;;) {
    const text = piece(rnd);
    if (!/[\u0000-\u001f]/.test(text) && !BAD_PIECES.includes(text)) return text;
  }
}

/** A string long enough for the scanner's word-wise control check, or dense enough with escapes
 *  for its byte-by-byte read; now and then with a raw control byte somewhere. */
function longString(rnd: Rnd): string {
  const parts: string[] = [];
  const plain = "abcdefghijklmnopqrstuvwxyz 0123456789".repeat(1 + rnd(60)).slice(rnd(30));
  if (rnd(2)) parts.push(plain);
  const escapes = rnd(3) === 0 ? 0 : 20 + rnd(200);
  for (let k = 0; k < escapes; k++) parts.push(rnd(4) ? validPiece(rnd) : "z");
  if (rnd(2)) parts.push(plain);
  let text = parts.join("");
  if (rnd(3) === 0) {
    const at = rnd(text.length + 1);
    text = text.slice(0, at) + String.fromCharCode(rnd(0x20)) + text.slice(at);
  }
  return `"${text}"`;
}

function value(rnd: Rnd, depth: number): string {
  const kind = rnd(depth >= 6 ? 5 : 8);
  if (kind === 0) return number(rnd);
  if (kind === 1 || kind === 2) return rnd(15) === 0 ? longString(rnd) : string(rnd);
  if (kind === 3) return rnd(40) === 0 ? pick(rnd, ["tru", "nul", "True", "NULL", "nan", "undefined"]) : pick(rnd, ["true", "false", "null"]);
  if (kind === 4) return rnd(2) ? number(rnd) : string(rnd);
  const items = Array.from({ length: rnd(5) }, () => (kind === 7 ? `${string(rnd)}${space(rnd)}${rnd(60) ? ":" : ""}${space(rnd)}` : "") + value(rnd, depth + 1));
  let inside = items.map((item) => space(rnd) + item + space(rnd)).join(rnd(60) ? "," : "");
  if (rnd(60) === 0) inside += ","; // a trailing comma
  if (inside === "" && rnd(2)) inside = space(rnd);
  return kind === 7 ? `{${inside}}` : `[${inside}]`;
}

function document(rnd: Rnd): string {
  let text = space(rnd) + value(rnd, 0) + space(rnd);
  if (rnd(40) === 0) text = pick(rnd, NOT_SPACES) + text;
  if (rnd(40) === 0) text += pick(rnd, NOT_SPACES);
  if (rnd(60) === 0) text += pick(rnd, ["1", "x", "]", "}", ",", "[]", '"a"']);
  return text;
}

/** `bytes` at offset `shift` (0-3) of their memory: the word-wise reads meet every alignment. */
function placed(bytes: Buffer, shift: number): Buffer {
  const memory = Buffer.alloc(bytes.length + 8);
  bytes.copy(memory, shift);
  return memory.subarray(shift, shift + bytes.length);
}

function parse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

const show = (buf: Buffer) => JSON.stringify(buf.toString("latin1").slice(0, 300));

function fail(what: string, buf: Buffer, got: unknown, wanted: unknown): never {
  throw new Error(`${what}: got ${String(got)}, JSON.parse says ${String(wanted)}, on ${show(buf)}`);
}

/**
 * Walks the value at `at` with one scanner (forward only, as the gateway's scans go), down to every
 * value inside: each ends where the text JSON.parse reads as the value ends (an object's or array's
 * parse is that of its members' texts), each string's UTF-8 length is that of its parsed text.
 */
function walk(buf: Buffer, scan: JsonScanner, at: number): { end: number; value: unknown; depth: number } {
  const c = buf[at];
  let end: number;
  let composed: unknown;
  let depth = 0;
  if (c === 0x22) {
    end = scan.string(at);
    const text = parse(buf.toString("utf8", at, end));
    const bytes = end - at - 2 - scan.saved;
    if (text.ok && isUtf8(buf.subarray(at, end)) && bytes !== Buffer.byteLength(text.value as string)) fail("string bytes", buf, bytes, Buffer.byteLength(text.value as string));
  } else if (c === 0x5b || c === 0x7b) {
    // members up to the closing bracket; a repeated key: JSON.parse keeps the last value
    const items: unknown[] = [];
    const members = new Map<string, unknown>();
    end = skipSpace(buf, at + 1);
    while (buf[end] !== c + 2) {
      let start = end;
      let key = "";
      if (c === 0x7b) {
        const keyEnd = scan.string(end);
        key = JSON.parse(buf.toString("utf8", end, keyEnd)) as string;
        start = skipSpace(buf, skipSpace(buf, keyEnd) + 1);
      }
      const member = walk(buf, scan, start);
      depth = Math.max(depth, member.depth);
      if (c === 0x7b) members.set(key, member.value);
      else items.push(member.value);
      end = skipSpace(buf, member.end);
      if (buf[end] === 0x2c) end = skipSpace(buf, end + 1);
      else if (buf[end] !== c + 2) fail(`member at ${start} ending at ${member.end}`, buf, "no comma after", "a comma or the end");
    }
    end++;
    depth++;
    composed = c === 0x7b ? Object.fromEntries(members) : items;
  } else {
    end = scan.value(at);
  }
  const own = parse(buf.toString("utf8", at, end));
  if (end <= at || !own.ok) fail(`value at ${at} ending at ${end}`, buf, "no value", "a value");
  if (composed !== undefined && !isDeepStrictEqual(own.value, composed)) fail(`members of ${at}`, buf, JSON.stringify(composed), JSON.stringify(own.value));
  return { end, value: own.value, depth };
}

/** The scanner against JSON.parse on one text; true when it is valid JSON. */
function agrees(buf: Buffer): boolean {
  const parsed = parse(buf.toString("utf8"));
  const start = skipSpace(buf, 0);
  const end = new JsonScanner(buf).value(start);
  const accepted = end >= 0 && skipSpace(buf, end) === buf.length;
  if (accepted !== parsed.ok) fail("accepted", buf, accepted, parsed.ok);
  if (!parsed.ok) return false;
  const walked = walk(buf, new JsonScanner(buf), start);
  if (walked.end !== end || !isDeepStrictEqual(walked.value, parsed.value)) fail("walked", buf, walked.end, end);
  if (new JsonScanner(buf).skip(start) !== end) fail("skip end", buf, new JsonScanner(buf).skip(start), end);
  // counted on the text: a repeated key's earlier value is not in the parse
  const depth = walked.depth;
  if (new JsonScanner(buf).value(start, depth) !== end) fail(`value within depth ${depth}`, buf, "refused", "accepted");
  if (depth > 0 && new JsonScanner(buf).value(start, depth - 1) !== TOO_DEEP) fail(`value within depth ${depth - 1}`, buf, "accepted", "too deep");
  if (new JsonScanner(buf).nestingExceeds(depth)) fail(`nesting over ${depth}`, buf, true, false);
  if (depth > 0 && !new JsonScanner(buf).nestingExceeds(depth - 1)) fail(`nesting over ${depth - 1}`, buf, false, true);
  return true;
}

describe("the JSON byte scanner against JSON.parse", () => {
  it("accepts what JSON.parse accepts, and ends every value, string and nesting where it does, on 6,000 seeded texts", () => {
    const rnd = seeded(21);
    let valid = 0;
    for (let n = 0; n < 6000; n++) if (agrees(placed(Buffer.from(document(rnd)), rnd(4)))) valid++;
    // both sides of the border are well covered
    expect(valid).toBeGreaterThan(2000);
    expect(valid).toBeLessThan(5000);
  });

  it("agrees on numbers in every form, and on literals", () => {
    const rnd = seeded(5);
    const forms = [...BAD_NUMBERS, "0", "-0", "0.0", "-0.0e-0", "7", "-7", "10", "1234567890123456789012345", "1.5", "0.001", "1e5", "1E+5", "1e-5", "-1.25e-10", "1e400", "-1e-400", "2.e"];
    for (let n = 0; n < 300; n++) forms.push(number(rnd));
    for (const form of [...forms, "true", "false", "null", "tru", "nul", "falsey", "nulll", "TRUE", "t", "f", "n", "-true"]) {
      for (const text of [form, ` ${form} `, `[${form}]`, `{"k":${form}}`, `[${form},${form}]`, `[${form} 1]`]) agrees(Buffer.from(text));
    }
    expect(agrees(Buffer.from("-0"))).toBe(true);
    expect(agrees(Buffer.from("01"))).toBe(false);
  });

  it("ends a valid value where it ends when something follows it", () => {
    const rnd = seeded(8);
    let checked = 0;
    for (let n = 0; n < 1500; n++) {
      const text = value(rnd, 0);
      if (!parse(text).ok) continue;
      const buf = Buffer.from(text + pick(rnd, [",1", "]", "}", " x", ":", "\u00a0", '"']));
      expect(new JsonScanner(buf).value(0), text).toBe(Buffer.byteLength(text));
      checked++;
    }
    expect(checked).toBeGreaterThan(700);
  });

  it("agrees on every truncation of a sample of texts", () => {
    const rnd = seeded(13);
    let samples = 0;
    while (samples < 40) {
      const buf = Buffer.from(document(rnd));
      if (buf.length > 400 || !parse(buf.toString()).ok) continue;
      samples++;
      for (let cut = 0; cut <= buf.length; cut++) agrees(placed(buf.subarray(0, cut), cut & 3));
    }
  });

  it("agrees on garbage bytes, invalid UTF-8 and texts with bytes changed", () => {
    const rnd = seeded(34);
    const JSONISH = Buffer.from(' \t\n\r{}[]:,"\\/-+.0123456789eEtrufalsn\u00e9');
    for (let n = 0; n < 1500; n++) {
      const random = Buffer.from(Array.from({ length: rnd(40) }, () => (rnd(2) ? JSONISH[rnd(JSONISH.length)]! : rnd(256))));
      agrees(random);
      const text = Buffer.from(document(rnd));
      for (let k = 1 + rnd(3); k > 0 && text.length > 0; k--) text[rnd(text.length)] = rnd(2) ? rnd(256) : JSONISH[rnd(JSONISH.length)]!;
      agrees(text);
      // invalid UTF-8 inside a valid text
      const original = document(rnd);
      const at = rnd(original.length + 1);
      agrees(Buffer.concat([Buffer.from(original.slice(0, at)), Buffer.from([pick(rnd, [0xff, 0xc0, 0x80, 0xe2, 0xed, 0xf4])]), Buffer.from(original.slice(at))]));
    }
  });

  it("agrees on nesting thousands deep, without recursion", () => {
    for (const depth of [1, 2, 63, 64, 65, 100, 10_000]) {
      for (const [open, close] of [
        ["[", "]"],
        ['{"a":', "}"],
        ['[{"k":[', "]}]"],
      ] as const) {
        const text = open.repeat(depth) + "1" + close.repeat(depth);
        const buf = Buffer.from(text);
        const levels = depth * (open.length > 5 ? 3 : 1);
        expect(new JsonScanner(buf).value(0)).toBe(buf.length);
        expect(new JsonScanner(buf).value(0, levels)).toBe(buf.length);
        expect(new JsonScanner(buf).value(0, levels - 1)).toBe(TOO_DEEP);
        expect(new JsonScanner(buf).nestingExceeds(levels)).toBe(false);
        expect(new JsonScanner(buf).nestingExceeds(levels - 1)).toBe(true);
        if (depth <= 100) agrees(buf);
      }
    }
    // brackets inside strings are not nesting; one unclosed string ends the count
    expect(new JsonScanner(Buffer.from(`["${"[".repeat(100)}\\"${"{".repeat(100)}"]`)).nestingExceeds(1)).toBe(false);
    expect(new JsonScanner(Buffer.from(`[[ "\\\\" [[`)).nestingExceeds(3)).toBe(true);
    expect(new JsonScanner(Buffer.from(`[[ "\\" [[`)).nestingExceeds(2)).toBe(false);
  });
});

describe("a string", () => {
  /** Where a string ends by the old rule: the first quote after an even run of backslashes. */
  function parityEnd(buf: Buffer, at: number): number {
    for (let i = buf.indexOf(0x22, at + 1); i >= 0; i = buf.indexOf(0x22, i + 1)) {
      let slashes = 0;
      while (buf[i - 1 - slashes] === 0x5c) slashes++;
      if (slashes % 2 === 0) return i + 1;
    }
    return -1;
  }

  it("ends, saves and is refused as JSON.parse decides, unchecked where the quotes say, at every alignment", () => {
    const rnd = seeded(55);
    let refused = 0;
    let bytewise = 0;
    for (let n = 0; n < 3000; n++) {
      const literal = Buffer.from(rnd(3) === 0 ? longString(rnd) : string(rnd));
      const lead = Buffer.from(" ".repeat(rnd(9)) + pick(rnd, ["", "[", '{"k":', '"x",']));
      const buf = placed(Buffer.concat([lead, literal, Buffer.from(pick(rnd, ["", "]", ',"after\\"', "  "]))]), rnd(4));
      const at = lead.length;
      const parsed = parse(literal.toString());
      const scan = new JsonScanner(buf);
      const end = scan.string(at);
      if (!parsed.ok) {
        refused++;
        if (end !== -1) fail("string accepted", literal, end, "refused");
      } else {
        if (end !== at + literal.length) fail("string end", literal, end, at + literal.length);
        if (end - at - 2 - scan.saved !== Buffer.byteLength(parsed.value as string)) fail("string bytes", literal, end - at - 2 - scan.saved, Buffer.byteLength(parsed.value as string));
        if (scan.saved > 0 !== literal.includes("\\")) fail("escapes seen", literal, scan.saved, literal.includes("\\"));
        if (literal.toString().split("\\").length > 40) bytewise++;
      }
      expect(new JsonScanner(buf).string(at, false)).toBe(parityEnd(buf, at));
    }
    expect(refused).toBeGreaterThan(300);
    expect(bytewise).toBeGreaterThan(300);
  });

  it("refuses a raw control byte before the escapes that turn the scan bytewise", async () => {
    const escapes = "\\n".repeat(40);
    for (const text of [`"a\u0001b${escapes}"`, `"${"x".repeat(100)}\u001f${escapes}${"y".repeat(100)}"`, `"\u0000${escapes}"`]) {
      expect(new JsonScanner(Buffer.from(text)).string(0), JSON.stringify(text)).toBe(-1);
    }
    // so a large body holding one is refused, as JSON.parse refuses it
    const content = `a\u0001b${escapes}${"x".repeat(LONG_TEXT * 5)}`;
    await expect(parseLarge(Buffer.from(`{"messages":[{"role":"user","content":"${content}"}]}`), 64, true)).rejects.toMatchObject({ code: "invalid_json" });
  });
});
