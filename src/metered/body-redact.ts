// What a kept body must not hold (docs/fastgpt.md#redaction): the config's secrets and the caller's
// key, `sk-` keys, in the values the body decodes to — JSON's escapes read, base64 decoded, a
// stream's deltas joined (body-json.ts, body-sse.ts), a URL's `%XX` escapes read —, and the values
// of secret-named members.
// The secrets are found by one expression, built once per config, so redaction costs about the same
// with thousands of keys as with a few; and the cut at `server.bodyLog.maxBytes`.
import { redactJson } from "./body-json.js";
import { redactSse } from "./body-sse.js";
import { NOT_JSON, REDACTED, type Finder } from "./body-finder.js";

const SK_KEY = "sk-[A-Za-z0-9_-]{16,}";
/** shorter strings are too common to be told from text */
const MIN_SECRET = 6;
/** Runs of base64 (either alphabet) this long are decoded and searched: 12 bytes or more. */
const BASE64_RUN = 16;
const BASE64 = new Uint8Array(65536);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-") BASE64[c.charCodeAt(0)] = 1;
/** JSON escapes that may hide one of a secret's characters, where no secret holds a character
 *  that must be escaped (a quote, a backslash, a control character) */
const HIDING_ESCAPES = /\\[u/]/;
const ANY_ESCAPE = /\\/;
const MUST_ESCAPE = /["\\\u0000-\u001f]/;

/** How a kept body is read: JSON (`parsed`: JSON already parsed, a request), a stream's SSE text,
 *  or plain text (its bytes are its value). */
export type BodyKind = "json" | "parsed" | "sse" | "text";

export interface Redactor {
  /** A body redacted. `callerKeys`: the keys its request was sent with, in whatever header;
   *  `complete`: false when only its head was read (JSON then is read as a prefix). */
  (text: string, kind: BodyKind, callerKeys: readonly string[], complete: boolean): string;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** the longest first, so that a secret holding another is redacted whole; in any case */
const literals = (secrets: string[]) => [...secrets].sort((a, b) => b.length - a.length).map(escape);

/** A secret's search: every match, and whether a text holds one. */
interface Search {
  all: RegExp;
  any: RegExp;
}
const search = (source: string): Search => ({ all: new RegExp(source, "gi"), any: new RegExp(source, "i") });

export function createRedactor(secrets: string[]): Redactor {
  const known = new Set(secrets.filter((s) => s.length >= MIN_SECRET));
  // before `sk-`, so that a configured key that looks like one is redacted whole
  const config = search([...literals([...known]), SK_KEY].join("|"));
  const plainEscapes = ![...known].some((s) => MUST_ESCAPE.test(s));
  const configFinder = createFinder([config], plainEscapes);
  return (text, kind, callerKeys, complete) => {
    const extra = callerKeys.filter((k) => k.length >= MIN_SECRET && !known.has(k));
    // a caller's key the config does not hold in plain (a sha256, a created key): a search of its own
    const finder = extra.length ? createFinder([search(literals(extra).join("|")), config], plainEscapes && !extra.some((k) => MUST_ESCAPE.test(k))) : configFinder;
    if (kind === "text") return finder.scrub(text);
    if (kind === "sse") return redactSse(text, finder, complete);
    return redactJson(text, finder, complete, kind === "parsed") ?? NOT_JSON;
  };
}

function createFinder(searches: Search[], plainEscapes: boolean): Finder {
  const hiding = plainEscapes ? HIDING_ESCAPES : ANY_ESCAPE;
  const holds = (text: string) => searches.some((s) => s.any.test(text));
  function spans(value: string, literal = false): Array<[number, number]> {
    let out: Array<[number, number]> | undefined;
    for (const { all } of searches) {
      all.lastIndex = 0;
      for (let m = all.exec(value); m; m = all.exec(value)) (out ??= []).push([m.index, m.index + m[0].length]);
    }
    if (!literal) for (const run of base64Runs(value)) if (decodedHolds(value.slice(run[0], run[1]), holds)) (out ??= []).push(run);
    if (value.includes("%")) for (const run of percentRuns(value)) if (holds(percentDecoded(value.slice(run[0], run[1])))) (out ??= []).push(run);
    return out ? merged(out) : NONE;
  }
  return {
    spans: (value) => spans(value),
    scrub: (value, literal) => {
      const at = spans(value, literal);
      return at.length ? redactSpans(value, at) : value;
    },
    escapes: (text) => hiding.test(text),
  };
}

const NONE: Array<[number, number]> = [];

/** Each run of base64 characters long enough, with its padding. A loop over the characters: an
 *  expression tries each place a run might start in, and costs a few times more. */
function base64Runs(value: string): Array<[number, number]> {
  let runs: Array<[number, number]> | undefined;
  let run = 0;
  const length = value.length;
  for (let i = 0; i < length; i++) {
    if (BASE64[value.charCodeAt(i)] === 1) {
      run++;
      continue;
    }
    if (run >= BASE64_RUN) {
      let end = i;
      while (end < i + 2 && value.charCodeAt(end) === 0x3d) end++;
      (runs ??= []).push([i - run, end]);
    }
    run = 0;
  }
  if (run >= BASE64_RUN) (runs ??= []).push([length - run, length]);
  return runs ?? NONE;
}

/** Runs between a URL's (or a form's, or a text's) delimiters that hold a `%XX` escape: a secret in a
 *  query string (`?key=…`) has its `/`, `+` and `=` written so. Each escape found, then its run's
 *  ends looked for: linear (an expression would try each place a run might start in). */
function percentRuns(value: string): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  PERCENT.lastIndex = 0;
  for (let m = PERCENT.exec(value); m; m = PERCENT.exec(value)) {
    let start = m.index;
    while (start > 0 && RUN_ENDS[value.charCodeAt(start - 1)] !== 1) start--;
    let end = m.index + 3;
    while (end < value.length && RUN_ENDS[value.charCodeAt(end)] !== 1) end++;
    runs.push([start, end]);
    PERCENT.lastIndex = end;
  }
  return runs;
}
const PERCENT = /%[0-9A-Fa-f]{2}/g;
const RUN_ENDS = new Uint8Array(65536);
// a backslash too: a run cut there never takes half of a JSON escape (a body searched as it is)
for (const c of " \t\r\n\"'<>&?#=;,\\") RUN_ENDS[c.charCodeAt(0)] = 1;

/** A run with its `%XX` escapes read as UTF-8 bytes (a `%` that escapes nothing stays). */
function percentDecoded(run: string): string {
  try {
    return decodeURIComponent(run);
  } catch {
    // a stray `%` or bytes that are no UTF-8: each escape read alone
    return run.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
}

/** Whether a run of base64 decodes, from any of its first four characters, to text holding a secret. */
function decodedHolds(run: string, holds: (text: string) => boolean): boolean {
  // atob reads the standard alphabet only, unpadded or padded right, and is the quickest decoder
  const standard = run.replace(/=+$/, "").replace(/[-_]/g, (c) => (c === "-" ? "+" : "/"));
  let decodings = "";
  for (let from = 0; from < 4; from++) decodings += `${atob(standard.slice(from, standard.length - ((standard.length - from) % 4 === 1 ? 1 : 0)))}\n`;
  // one search of the four: a secret holds no line end
  return holds(decodings);
}

function merged(spans: Array<[number, number]>): Array<[number, number]> {
  spans.sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [spans[0]!];
  for (const s of spans.slice(1)) {
    const last = out[out.length - 1]!;
    if (s[0] <= last[1]) last[1] = Math.max(last[1], s[1]);
    else out.push(s);
  }
  return out;
}

/** The value with each span `[redacted]`. */
export function redactSpans(value: string, spans: Array<[number, number]>): string {
  let out = "";
  let at = 0;
  for (const [start, end] of spans) {
    out += value.slice(at, start) + REDACTED;
    at = end;
  }
  return out + value.slice(at);
}

/** At most `maxBytes` of UTF-8, cut at a character and ending `...`; whether it was cut. */
export function cut(text: string, maxBytes: number): [string, boolean] {
  // a UTF-16 unit is at most 3 bytes of UTF-8: most bodies are measured without being encoded
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return [text, false];
  const head = Buffer.from(text).subarray(0, maxBytes - 3).toString("utf8").replace(/\uFFFD+$/, "");
  return [`${head}...`, true];
}
