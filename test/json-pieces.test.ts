// A large JSON document parsed in pieces (src/json/slices.ts) is what JSON.parse makes of it, or
// refused where JSON.parse refuses it: seeded documents of many small values, big containers, long
// strings dense with escapes, surrogate pairs and multi-byte characters across the pieces' edges,
// `__proto__` and repeated keys; then each of them broken a byte at a time.
import { describe, expect, it } from "vitest";
import { JsonScanner } from "../src/json/scan.js";
import { JsonPieceError, PIECE_BYTES, STRING_PIECE_BYTES, parseInPieces, type JsonPath, type LongString } from "../src/json/slices.js";
import { ordinaryText, seeded } from "./support/text-corpus.js";

type Rnd = (n: number) => number;
const pick = <T>(rnd: Rnd, xs: readonly T[]): T => xs[rnd(xs.length)]!;
const SPACES = ["", "", "", " ", "\n", "\t", "\r\n", "  "];
const LONG = 16 * 1024;

/** A JSON string literal of `text` as clients write it: plain, all non-ASCII escaped, or with
 *  needless escapes. */
function literal(rnd: Rnd, text: string): string {
  const plain = JSON.stringify(text);
  switch (rnd(3)) {
    case 0:
      return plain;
    case 1:
      return plain.replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
    default:
      return plain.replace(/\//g, "\\/").replace(/e/g, "\\u0065");
  }
}

function scalar(rnd: Rnd): string {
  return pick(rnd, ["0", "-1.5e3", "123456789", "true", "false", "null", '""', '"a"', '"\\u00e9\\n"', '"😀"', "3.14", "-0"]);
}

/** A container of about `bytes` bytes, its children small, large, or nested `depth` more levels. */
function container(rnd: Rnd, bytes: number, depth: number): string {
  const object = rnd(2) === 0;
  const children: string[] = [];
  let size = 2;
  const keys = ["a", "model", "__proto__", "content", "messages", "x\\u0079", "n"];
  while (size < bytes) {
    let child: string;
    const kind = rnd(20);
    if (kind === 0) child = literal(rnd, ordinaryText(rnd, LONG + rnd(3 * LONG)));
    else if (kind === 1 && depth > 0) child = container(rnd, rnd(4) === 0 ? PIECE_BYTES * (1 + rnd(3)) : 1 + rnd(400), depth - 1);
    else if (kind === 2 && depth > 0) child = container(rnd, 2 + rnd(60), depth - 1);
    else child = scalar(rnd);
    const s = () => pick(rnd, SPACES);
    const item = object ? `${s()}${rnd(30) === 0 ? literal(rnd, ordinaryText(rnd, 40)) : `"${pick(rnd, keys)}${rnd(3)}"`}${s()}:${s()}${child}${s()}` : `${s()}${child}${s()}`;
    children.push(item);
    size += item.length + 1;
  }
  return object ? `{${children.join(",")}}` : `[${children.join(",")}]`;
}

/** What JSON.parse makes of the bytes, or "refused". */
function expected(buf: Buffer): unknown {
  try {
    return JSON.parse(buf.toString("utf8"));
  } catch {
    return "refused";
  }
}

async function pieces(buf: Buffer, keep?: (path: JsonPath, string: LongString) => unknown, maxDepth = 1000, maxValues = Infinity): Promise<unknown> {
  try {
    return await parseInPieces(buf, { maxDepth, maxValues, longString: LONG, keep, turn: () => new Promise((resolve) => setImmediate(resolve)) });
  } catch (err) {
    if (err instanceof JsonPieceError) return err.reason === "invalid" ? "refused" : err.reason === "tooDeep" ? "too deep" : "too many";
    throw err;
  }
}

/** Equal as JSON.parse's values are: the same JSON, keys in the same order, no prototype set by a key. */
function expectSame(got: unknown, want: unknown, what: string): void {
  expect(JSON.stringify(got), what).toBe(JSON.stringify(want));
  expect(got, what).toStrictEqual(want);
}

describe("a JSON document parsed in pieces", () => {
  it("is what JSON.parse makes of 40 seeded documents of 20 KB to 600 KB", async () => {
    const rnd = seeded(11);
    for (let n = 0; n < 40; n++) {
      const text = container(rnd, [20_000, 80_000, 300_000, 600_000][n % 4]!, 4);
      const buf = Buffer.from(pick(rnd, SPACES) + text + pick(rnd, SPACES));
      expectSame(await pieces(buf), expected(buf), `document ${n}`);
    }
  });

  it("refuses what JSON.parse refuses, and parses what it parses, when a byte of a document is broken", async () => {
    const rnd = seeded(12);
    const breaks = [",", "]", "}", "[", "{", '"', ":", "\u0001", "x", "\\", "", "1"];
    let refused = 0;
    for (let n = 0; n < 200; n++) {
      const buf = Buffer.from(container(rnd, 20_000 + rnd(60_000), 3));
      // near a structural byte, where a piece's edges are
      let at = rnd(buf.length);
      for (let k = 0; k < 64 && at < buf.length && !"[]{},:\"".includes(String.fromCharCode(buf[at]!)); k++) at++;
      const broken = Buffer.concat([buf.subarray(0, at + rnd(2)), Buffer.from(pick(rnd, breaks)), buf.subarray(at + 1 + rnd(2))]);
      const want = expected(broken);
      if (want === "refused") refused++;
      expectSame(await pieces(broken), want, `document ${n}, broken at ${at}`);
      const cut = buf.subarray(0, rnd(buf.length));
      expect(await pieces(cut)).toBe("refused");
    }
    expect(refused).toBeGreaterThan(60);
  });

  it("decodes long strings in pieces: escapes, surrogate pairs and multi-byte characters on every edge", async () => {
    const rnd = seeded(13);
    const units = ["\\n", "\\u00e9", "\\uD83D\\uDE00", "😀", "é", "中", "\\\\", '\\"', "a", "\\ud800", "\\uDC00", "\\/"];
    for (let n = 0; n < 12; n++) {
      let inside = "";
      // one unit over and over: every alignment of the unit against the piece size is met
      const unit = units[n]!;
      while (inside.length < STRING_PIECE_BYTES * 1.5) inside += rnd(3) === 0 ? pick(rnd, units) : unit;
      const buf = Buffer.from(`{"messages":[{"role":"user","content":"${inside}"}],"other":"${inside}"}`);
      const kept: string[] = [];
      const keep = (path: JsonPath, s: LongString) => {
        kept.push(JSON.stringify(path));
        return path.includes("content") ? { text: s.text, bytes: s.end - s.start } : undefined;
      };
      const got = (await pieces(buf, keep)) as { messages: Array<{ content: { text: string; bytes: number } }>; other: string };
      const want = expected(buf) as { messages: Array<{ content: string }>; other: string };
      expect(got.messages[0]!.content.text === want.messages[0]!.content, `unit ${unit}`).toBe(true);
      expect(got.other === want.other, `unit ${unit}`).toBe(true);
      expect(kept).toEqual(['["messages",0,"content"]', '["other"]']);
    }
  });

  it("sets __proto__ as JSON.parse does (an own member), keeps the last of a repeated key and its first place", async () => {
    const big = `[${Array(20_000).fill("1").join(",")}]`;
    const buf = Buffer.from(`{"b":1,"__proto__":{"polluted":true},"a":${big},"b":2,"c":${big},"__proto__":{"x":${big}}}`);
    const got = (await pieces(buf)) as Record<string, unknown>;
    expectSame(got, expected(buf), "document");
    expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
    expect(Object.keys(got)).toEqual(["b", "__proto__", "a", "c"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses nesting deeper than maxDepth wherever it is, and takes nesting of maxDepth", async () => {
    const filler = `[${Array(10_000).fill('"abc"').join(",")}]`;
    const nest = (levels: number, inner: string) => "[".repeat(levels - 1) + inner + "]".repeat(levels - 1);
    const outcomes = new Set<string>();
    for (const inner of [filler, `[1,${filler},[[2]]]`]) {
      for (const levels of [6, 8, 9, 10]) {
        const buf = Buffer.from(`{"x":${filler},"deep":${nest(levels, inner)}}`);
        const got = await pieces(buf, undefined, 10);
        if (new JsonScanner(buf).nestingExceeds(10)) expect(got, `${levels} levels`).toBe("too deep");
        else expectSame(got, expected(buf), `${levels} levels`);
        outcomes.add(got === "too deep" ? "refused" : "parsed");
      }
    }
    expect([...outcomes].sort()).toEqual(["parsed", "refused"]);
    const within = Buffer.from(`[${filler},${"[".repeat(9)}${"]".repeat(9)}]`);
    expectSame(await pieces(within, undefined, 10), expected(within), "ten levels");
    const past = Buffer.from(`[${filler},${"[".repeat(10)}${"]".repeat(10)}]`);
    expect(await pieces(past, undefined, 10)).toBe("too deep");
  });

  it("counts its objects, arrays and strings (keys too) exactly, and refuses one more than maxValues", async () => {
    const count = (v: unknown): number => {
      if (typeof v === "string") return 1;
      if (Array.isArray(v)) return 1 + v.reduce((n: number, x) => n + count(x), 0);
      if (v && typeof v === "object") return 1 + Object.entries(v).reduce((n, [, x]) => n + 1 + count(x), 0);
      return 0;
    };
    const rnd = seeded(15);
    for (let n = 0; n < 12; n++) {
      // without repeated keys: what JSON.parse keeps is what the text holds
      const value = expected(Buffer.from(container(rnd, 30_000 + rnd(200_000), 4)));
      const buf = Buffer.from(JSON.stringify(value));
      const values = count(value);
      expectSame(await pieces(buf, undefined, 1000, values), expected(buf), `document ${n}`);
      expect(await pieces(buf, undefined, 1000, values - 1), `document ${n}`).toBe("too many");
    }
  });

  it("decodes invalid UTF-8 as JSON.parse decodes it (U+FFFD)", async () => {
    const text = Buffer.from(container(seeded(14), 200_000, 3));
    for (const at of [100, 50_000, 150_000]) {
      const buf = Buffer.concat([text.subarray(0, at), Buffer.from([0xff, 0xc3]), text.subarray(at)]);
      expectSame(await pieces(buf), expected(buf), `0xff at ${at}`);
    }
  });
});
