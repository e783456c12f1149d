// A kept JSON body redacted on the values it decodes to (docs/fastgpt.md#redaction), its bytes kept
// where nothing is redacted: each string read with its escapes, a secret-named member's value
// (whatever it is: a string, a number, an object) replaced whole. A body with no escape that could
// hide a character and no secret-named member decodes to its own bytes: it is searched as text, in
// one pass, and never taken apart.
import { REDACTED, type Finder } from "./body-finder.js";

/** Members whose values are secrets: their names lowercased, without `-` and `_`. */
export const SECRET_MEMBERS = [
  "apikey", "xapikey", "apikeys", "xgoogapikey", "authorization", "proxyauthorization", "password", "passwd", "secret",
  "clientsecret", "secretkey", "accesskey", "secretaccesskey", "privatekey", "token", "accesstoken", "refreshtoken",
  "idtoken", "authtoken", "sessiontoken", "bearertoken", "credential", "credentials", "cookie", "setcookie", "outlinkuid",
];
const SECRET = new Set(SECRET_MEMBERS);
const normalized = (name: string) => name.toLowerCase().replace(/[-_]/g, "");
/** a member whose name is one of them, however spelled: what sends a body to be taken apart */
export const SECRET_MEMBER = new RegExp(`"[-_]*(?:${SECRET_MEMBERS.map((n) => [...n].join("[-_]*")).join("|")})[-_]*"\\s*:`, "i");

/** A string, a punctuation mark, or a number or literal; after blanks. */
const TOKEN = /\s*(?:("(?:[^"\\]|\\.)*")|([{}[\]:,])|(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null))/y;
/** what a body read in part may end with: blanks, or the head of a string, a number or a literal */
const OPEN_END = /\s*(?:"(?:[^"\\]|\\.)*\\?(?:u[0-9a-fA-F]{0,3})?|-?[0-9.eE+-]*|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?)$/y;

/** A scalar value read, with the member it is under ("" in an array or at the top) and where its token is. */
export type ScalarSink = (member: string, value: string | number, start: number, end: number) => void;

interface Frame {
  object: boolean;
  /** the member whose value comes next (objects) */
  member: string;
}

type Expect = "value" | "name" | "colon" | "next" | "end";
type Edit = [number, number, string];

/** The body redacted; undefined when it is not JSON (or, read in part, not the head of JSON).
 *  `parsed`: known to be JSON (a request). */
export function redactJson(text: string, finder: Finder, complete: boolean, parsed = false): string | undefined {
  if (!finder.escapes(text) && !SECRET_MEMBER.test(text)) {
    // its bytes are its values; a whole answer is still checked to be JSON
    if (complete && !parsed && !isJson(text)) return undefined;
    return finder.scrub(text);
  }
  const edits = readJson(text, finder, complete);
  return edits && applyEdits(text, edits);
}

/** Every scalar of a JSON body read (a stream's event), for its deltas; false when it is not JSON. */
export function eachScalar(text: string, finder: Finder, complete: boolean, sink: ScalarSink): boolean {
  return readJson(text, finder, complete, sink) !== undefined;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The edits that redact the body, token by token; undefined when it is not JSON. */
function readJson(text: string, finder: Finder, complete: boolean, sink?: ScalarSink): Edit[] | undefined {
  const reader = new Reader(text, finder, sink);
  let at = 0;
  for (TOKEN.lastIndex = 0; ; ) {
    const m = TOKEN.exec(text);
    if (!m) break;
    at = TOKEN.lastIndex;
    const token = m[1] ?? m[2] ?? m[3]!;
    if (!reader.read(token, m[2] !== undefined, m[1] !== undefined, at - token.length, at)) return undefined;
  }
  return ended(text, at, reader.expect, reader.depth, complete) ? reader.end(at, complete) : undefined;
}

/** Where a body's reading is, token after token, and what it redacts. */
class Reader {
  readonly edits: Edit[] = [];
  expect: Expect = "value";
  readonly #stack: Frame[] = [];
  /** where a secret member's object or array began, and its depth: skipped to its end */
  #skip: { from: number; depth: number } | undefined;

  constructor(
    private readonly text: string,
    private readonly finder: Finder,
    private readonly sink?: ScalarSink,
  ) {}

  get depth(): number {
    return this.#stack.length;
  }

  /** One token; false where JSON has no such token. */
  read(token: string, mark: boolean, string: boolean, start: number, end: number): boolean {
    if (!mark) return this.#scalar(token, string, start, end);
    if (token === "{" || token === "[") return this.#open(token === "{", start);
    if (token === "}" || token === "]") return this.#close(token === "}", start, end);
    const colon = token === ":";
    if (this.expect !== (colon ? "colon" : "next")) return false;
    this.expect = colon || !this.#top!.object ? "value" : "name";
    return true;
  }

  /** The edits, once the last token is read: a secret value the body ends in is redacted to its end. */
  end(at: number, complete: boolean): Edit[] {
    if (this.#skip) this.edits.push([this.#skip.from, this.text.length, `"${REDACTED}"`]);
    else if (!complete && !this.sink && this.expect === "value") openString(this.text, at, this.#secretNext(), this.finder, this.edits);
    return this.edits;
  }

  get #top(): Frame | undefined {
    return this.#stack[this.#stack.length - 1];
  }

  /** whether the value that comes next is a secret member's */
  #secretNext(): boolean {
    const top = this.#top;
    return top !== undefined && top.object && SECRET.has(normalized(top.member));
  }

  #scalar(token: string, string: boolean, start: number, end: number): boolean {
    if (this.expect !== "value" && this.expect !== "name") return false;
    const value = !string ? token : this.#skip ? "" : decoded(token);
    if (value === undefined) return false;
    const top = this.#top;
    if (this.expect === "name") {
      top!.member = value;
      if (!this.sink && this.finder.spans(value).length) this.edits.push([start, end, JSON.stringify(this.finder.scrub(value))]);
      this.expect = "colon";
      return true;
    }
    this.expect = top ? "next" : "end";
    if (this.#skip) return true;
    if (this.sink) this.sink(top?.object ? top.member : "", string ? value : Number(value), start, end);
    else if (this.#secretNext()) this.edits.push([start, end, `"${REDACTED}"`]);
    else if (string && this.finder.spans(value).length) this.edits.push([start, end, JSON.stringify(this.finder.scrub(value))]);
    return true;
  }

  #open(object: boolean, start: number): boolean {
    if (this.expect !== "value") return false;
    if (!this.#skip && this.#secretNext()) this.#skip = { from: start, depth: this.#stack.length };
    this.#stack.push({ object, member: "" });
    this.expect = object ? "name" : "value";
    return true;
  }

  #close(object: boolean, start: number, end: number): boolean {
    const top = this.#top;
    // right after its opening, a container may close: `{}`, `[]`
    const empty = (this.expect === "name" || this.expect === "value") && this.text.charCodeAt(lastNonBlank(this.text, start)) === (object ? 0x7b : 0x5b);
    if (!top || top.object !== object || (this.expect !== "next" && !empty)) return false;
    this.#stack.pop();
    if (this.#skip && this.#stack.length === this.#skip.depth) {
      this.edits.push([this.#skip.from, end, `"${REDACTED}"`]);
      this.#skip = undefined;
    }
    this.expect = this.#stack.length ? "next" : "end";
    return true;
  }
}

/** The string a body read in part ends in, if it does: redacted as a whole one would be, its
 *  closing quote still missing. */
function openString(text: string, at: number, secret: boolean, finder: Finder, edits: Edit[]): void {
  const start = text.indexOf('"', at);
  if (start < 0) return;
  const raw = text.slice(start + 1);
  const value = decoded(`"${raw}"`) ?? decoded(`"${raw.replace(/\\(?:u[0-9a-fA-F]{0,3})?$/, "")}"`);
  if (value === undefined || secret) edits.push([start, text.length, `"${REDACTED}`]);
  else if (finder.spans(value).length) edits.push([start, text.length, JSON.stringify(finder.scrub(value)).slice(0, -1)]);
}

/** A string token's value; undefined when an escape is not JSON's. */
function decoded(token: string): string | undefined {
  if (!token.includes("\\")) return token.slice(1, -1);
  try {
    return JSON.parse(token) as string;
  } catch {
    return undefined;
  }
}

function lastNonBlank(text: string, before: number): number {
  let i = before - 1;
  while (i >= 0 && /\s/.test(text[i]!)) i--;
  return i;
}

/** Whether what follows the last token is the end a body read whole, or read in part, may have. */
function ended(text: string, at: number, expect: Expect, depth: number, complete: boolean): boolean {
  if (complete) return depth === 0 && expect === "end" && text.slice(at).trim() === "";
  OPEN_END.lastIndex = at;
  return OPEN_END.test(text);
}

/** The text with each edit made (edits in order, none overlapping). */
export function applyEdits(text: string, edits: Array<[number, number, string]>): string {
  if (edits.length === 0) return text;
  let out = "";
  let at = 0;
  for (const [start, end, replacement] of edits) {
    out += text.slice(at, start) + replacement;
    at = end;
  }
  return out + text.slice(at);
}
