// The vocabulary of test/support/hostile-bodies.ts and hostile-extremes.ts: what a hostile case is,
// what the gateway must answer to it, and a seeded random source so that a run can be replayed.

export type Expectation =
  /** a valid request: 2xx */
  | { kind: "ok" }
  /** a client mistake: 4xx, exactly `status` when given */
  | { kind: "refused"; status?: number }
  /** hostile but acceptable either way: 2xx or 4xx — never 5xx */
  | { kind: "either" };

export type Category =
  | "valid"
  | "malformed-json"
  | "mutated"
  | "wrong-types"
  | "huge-strings"
  | "deep-nesting"
  | "proto-keys"
  | "invalid-utf8"
  | "giant-arrays"
  | "odd-headers";

export interface HostileCase {
  id: number;
  category: Category;
  label: string;
  body: Buffer;
  /** a header given as an array is sent once per value */
  headers: Record<string, string | string[]>;
  /** sent with Transfer-Encoding: chunked instead of Content-Length */
  chunked: boolean;
  path: string;
  /** "roomy": the gateway with the large body limit (giant arrays, the deepest bodies) */
  target: "small" | "roomy";
  expect: Expectation;
  /** the answer must come within this many milliseconds (cases whose cost grows with their size) */
  budgetMs?: number;
}

export interface HostileOptions {
  seed: number;
  /** the small gateway's server.bodyLimitBytes */
  bodyLimitBytes: number;
  keys: { app: string; global: string; hashed: string };
}

export const OK: Expectation = { kind: "ok" };
export const EITHER: Expectation = { kind: "either" };
export const REFUSED: Expectation = { kind: "refused" };
export const refused = (status: number): Expectation => ({ kind: "refused", status });
export const CHAT_PATH = "/v1/chat/completions";

export type Random = ReturnType<typeof createRandom>;

/** mulberry32: small, fast, and good enough to pick test cases. */
export function createRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  return { next, int, chance: (p: number) => next() < p, pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]! };
}

export type Add = (category: Category, label: string, body: string | Buffer | object, expect: Expectation, more?: Partial<HostileCase>) => void;

/** A valid message, as JSON text. */
export const MSG = '{"role":"user","content":"hi"}';

export const TEXTS = [
  "hi",
  "Hello, world!",
  "你好，世界",
  "مرحبا بالعالم",
  "😀🎉👍🏽",
  "e\u0301 combining",
  "<|endoftext|> <|im_start|>",
  "line1\nline2\ttab\r\n",
  "nul \u0000 inside",
  'quote " backslash \\',
  "</script><script>alert(1)</script>",
  "'; DROP TABLE chats; --",
  "${process.env.HOME} {{variables}} %s %n",
  "\u202eRTL override",
  "zero\u200bwidth\ufeffbom",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
  "[[[[{{{{ not nesting }}}}]]]]",
];

/** One to three of TEXTS: scripts, emoji, control characters, markup and format strings. */
export function randomText(rnd: Random): string {
  return Array.from({ length: rnd.int(1, 3) }, () => rnd.pick(TEXTS)).join(" ");
}

/** A short JSON rendering of a value, for case labels. */
export function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 30)}…(${text.length})` : text;
}
