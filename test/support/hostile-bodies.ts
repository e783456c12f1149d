// Hostile chat requests for test/hostile-input.test.ts: a seeded generator of raw request bodies
// (bytes, not only objects), the headers to send them with, and what the gateway must answer. This
// file holds the entry point and the JSON-shaped cases (valid, malformed, mutated, wrong types);
// hostile-extremes.ts the size, depth, key, encoding and header cases.
import { deepNesting, giantArrays, hugeStrings, invalidUtf8, oddHeaders, protoKeys } from "./hostile-extremes.js";
import { CHAT_PATH, EITHER, MSG, OK, REFUSED, createRandom, preview, randomText, refused, type Add, type Expectation, type HostileCase, type HostileOptions, type Random } from "./hostile-kit.js";

export type { Category, Expectation, HostileCase, HostileOptions } from "./hostile-kit.js";

export function generateHostileCases(opts: HostileOptions): HostileCase[] {
  const rnd = createRandom(opts.seed);
  const cases: HostileCase[] = [];
  const baseHeaders = { "content-type": "application/json", authorization: `Bearer ${opts.keys.app}` };
  const add: Add = (category, label, body, expect, more = {}) => {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === "string" ? body : JSON.stringify(body), "utf8");
    cases.push({ id: cases.length, category, label, body: bytes, headers: baseHeaders, chunked: false, path: CHAT_PATH, target: "small", expect, ...more });
  };
  validBodies(add, rnd, opts);
  malformedJson(add);
  mutatedBodies(add, rnd);
  wrongTypes(add, rnd);
  hugeStrings(add, rnd, opts.bodyLimitBytes);
  deepNesting(add, rnd);
  protoKeys(add);
  invalidUtf8(add, rnd);
  giantArrays(add);
  oddHeaders(add, rnd, opts);
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Valid requests: the suite must not only send garbage.

/** A valid body for the app key (models m1, echo, m-vision) or the hashed key (echo only). */
export function randomValidBody(rnd: Random, hashed = false): Record<string, unknown> {
  const model = hashed ? rnd.pick([undefined, "echo"]) : rnd.pick([undefined, "m1", "m1", "echo", "m-vision"]);
  const content = (text: string) => {
    if (!rnd.chance(0.25)) return text;
    const parts: unknown[] = [{ type: "text", text }];
    if (model === "m-vision" && rnd.chance(0.5)) parts.push({ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } });
    return parts;
  };
  const messages: unknown[] = [];
  if (rnd.chance(0.3)) messages.push({ role: rnd.pick(["system", "developer"]), content: randomText(rnd) });
  for (let i = rnd.int(0, 3); i > 0; i--) messages.push({ role: "user", content: content(randomText(rnd)) }, { role: "assistant", content: randomText(rnd) });
  messages.push({ role: "user", content: content(randomText(rnd)) });
  const body: Record<string, unknown> = { model, messages };
  if (rnd.chance(0.4)) {
    body.stream = true;
    if (rnd.chance(0.5)) body.stream_options = { include_usage: rnd.chance(0.5) };
  } else if (rnd.chance(0.2)) body.stream = false;
  if (rnd.chance(0.3)) body.temperature = rnd.pick([0, 0.2, 0.7, 1, 1.5, 2, -1, null]);
  if (rnd.chance(0.3)) body.max_tokens = rnd.pick([1, 16, 500, 1000, 5000, null]);
  else if (rnd.chance(0.1)) body.max_completion_tokens = rnd.int(1, 3000);
  if (rnd.chance(0.2)) body.detail = rnd.chance(0.5);
  if (rnd.chance(0.2)) body.chatId = `hostile-${Math.floor(rnd.next() * 1e9).toString(36)}`;
  if (rnd.chance(0.2)) body.variables = { name: randomText(rnd), n: rnd.int(0, 9), nested: { a: [1, 2] } };
  if (rnd.chance(0.1)) body.top_p = rnd.next();
  if (rnd.chance(0.1)) body.stop = ["\n\n", "END"];
  if (rnd.chance(0.1)) body.user = "user-1";
  return body;
}

/** Valid JSON text of `value`, in one of several legal spellings. */
function spell(rnd: Random, value: unknown): string {
  const pick = rnd.int(0, 5);
  const text = JSON.stringify(value, null, pick === 1 ? 2 : pick === 2 ? "\t" : undefined);
  if (pick === 3) return text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (pick === 4) return ` \r\n\t${text}\n\n `;
  if (pick === 5) return JSON.stringify(value, null, 1).replace(/\n/g, "\r\n");
  return text;
}

function validBodies(add: Add, rnd: Random, opts: HostileOptions): void {
  for (let i = 0; i < 300; i++) {
    const hashed = rnd.chance(0.1);
    const body = randomValidBody(rnd, hashed);
    const headers = { "content-type": "application/json", authorization: `Bearer ${hashed ? opts.keys.hashed : opts.keys.app}` };
    const path = rnd.pick([CHAT_PATH, CHAT_PATH, "/api/v1/chat/completions"]);
    add("valid", `valid #${i}${hashed ? " (hashed key)" : ""}`, spell(rnd, body), OK, { headers, path, chunked: rnd.chance(0.1) });
  }
}

// ---------------------------------------------------------------------------------------------
// Malformed JSON: every prefix of a few bodies, trailing garbage, JavaScript-isms, wrong tops.

const BASES = [
  '{"model":"m1","messages":[{"role":"user","content":"hi"}]}',
  '{"messages":[{"role":"user","content":"hi"}],"stream":true,"temperature":0.5}',
  '{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":5}',
];
const BASE = BASES[0]!;

function malformedJson(add: Add): void {
  for (const base of BASES) {
    for (let cut = 0; cut < base.length; cut++) add("malformed-json", `prefix of ${cut} bytes`, base.slice(0, cut), refused(400));
  }
  const garbage = ["x", "}", "]", ",", "{}", "null", "\u0000", "\u001b[31m", "//c", "/*c*/", ' {"a":1}', ";", "\u2028", "\ufeff", "\\"];
  for (const g of garbage) add("malformed-json", `trailing ${JSON.stringify(g)}`, BASE + g, refused(400));
  const tokens = ["NaN", "Infinity", "-Infinity", "undefined", "'hi'", "`hi`", "0x1", "01", ".5", "1.", "+1", "--1", "True", "None", "nil", "1e", "-", "\"\\x41\"", "\"\\u12\"", "\"\\q\"", "\"a\tb\"", "\"a\nb\"", "\"\u0001\""];
  for (const t of tokens) {
    add("malformed-json", `content ${t}`, BASE.replace('"hi"', t), refused(400));
    add("malformed-json", `temperature ${t}`, `{"messages":[${MSG}],"temperature":${t}}`, refused(400));
  }
  const texts: Array<[string, string]> = [
    ["single quotes", "{'messages':[{'role':'user','content':'hi'}]}"],
    ["mixed quotes", `{"messages":[{'role':"user","content":"hi"}]}`],
    ["unquoted keys", "{messages:[{role:\"user\",content:\"hi\"}]}"],
    ["trailing comma in object", `{"messages":[${MSG}],}`],
    ["trailing comma in array", `{"messages":[${MSG},]}`],
    ["line comment", `{"messages":[${MSG}] // hi\n}`],
    ["block comment", `{/* c */"messages":[${MSG}]}`],
    ["missing colon", `{"messages" [${MSG}]}`],
    ["missing comma", `{"model":"m1" "messages":[${MSG}]}`],
    ["double colon", `{"messages"::[${MSG}]}`],
    ["unbalanced braces", `{"messages":[${MSG}]}}`],
    ["unbalanced brackets", `{"messages":[${MSG}]]}`],
    ["unterminated string", '{"messages":[{"role":"user","content":"hi}]}'],
    ["unterminated object", `{"messages":[${MSG}]`],
    ["empty body", ""],
    ["whitespace only", " \r\n\t "],
    ["a lone newline", "\n"],
    ["null", "null"],
    ["true", "true"],
    ["zero", "0"],
    ["a string", '"messages"'],
    ["an empty array", "[]"],
    ["an array of the body", `[{"messages":[${MSG}]}]`],
    ["an empty object", "{}"],
    ["two objects", `{"messages":[${MSG}]}{"messages":[${MSG}]}`],
    ["JSON lines", `{"messages":[${MSG}]}\n{"messages":[${MSG}]}\n`],
    ["a form body", "messages=hi&model=m1"],
    ["XML", "<messages><role>user</role></messages>"],
    ["a number key", `{1:"x","messages":[${MSG}]}`],
    ["hex escape", '{"messages":[{"role":"user","content":"\\x68i"}]}'],
  ];
  for (const [label, text] of texts) add("malformed-json", label, text, refused(400));
  // Legal JSON that a strict reader may still refuse.
  add("malformed-json", "duplicate key, the valid one last", `{"messages":"x","messages":[${MSG}]}`, EITHER);
  add("malformed-json", "duplicate key, the valid one first", `{"messages":[${MSG}],"messages":"x"}`, EITHER);
  add("malformed-json", "UTF-8 byte order mark", `\ufeff{"messages":[${MSG}]}`, EITHER);
  add("malformed-json", "1e999 (Infinity) as temperature", `{"messages":[${MSG}],"temperature":1e999}`, REFUSED);
  add("malformed-json", "-0 as max_tokens", `{"messages":[${MSG}],"max_tokens":-0}`, REFUSED);
}

// ---------------------------------------------------------------------------------------------
// Random byte mutations of valid bodies, judged by JSON.parse: unparsable must be 400.

const INSERTS = ["{", "}", "[", "]", ",", ":", '"', "\\", "null", "1e999", "-", "\u0000", "\uffff", "\ud800", "\u00ff", "\"__proto__\":{},", "[[[[", "]]]]"];

function mutatedBodies(add: Add, rnd: Random): void {
  for (let i = 0; i < 250; i++) {
    let bytes: Buffer = Buffer.from(JSON.stringify(randomValidBody(rnd)), "utf8");
    for (let m = rnd.int(1, 4); m > 0 && bytes.length > 2; m--) bytes = mutate(rnd, bytes);
    let parses = true;
    try {
      JSON.parse(bytes.toString("utf8"));
    } catch {
      parses = false;
    }
    add("mutated", `mutation #${i}${parses ? " (still parses)" : ""}`, bytes, parses ? EITHER : refused(400));
  }
}

function mutate(rnd: Random, bytes: Buffer): Buffer {
  const at = rnd.int(0, bytes.length - 1);
  switch (rnd.int(0, 4)) {
    case 0: {
      const copy = Buffer.from(bytes);
      copy[at] = rnd.int(0, 255);
      return copy;
    }
    case 1:
      return Buffer.concat([bytes.subarray(0, at), bytes.subarray(Math.min(bytes.length, at + rnd.int(1, 8)))]);
    case 2:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from(rnd.pick(INSERTS)), bytes.subarray(at)]);
    case 3: {
      const end = Math.min(bytes.length, at + rnd.int(1, 12));
      return Buffer.concat([bytes.subarray(0, end), bytes.subarray(at, end), bytes.subarray(end)]);
    }
    default: {
      const other = rnd.int(0, bytes.length - 1);
      const copy = Buffer.from(bytes);
      [copy[at], copy[other]] = [copy[other]!, copy[at]!];
      return copy;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Wrong types for every field: each bad value alone (plain and streaming), then random mixes.

type Bad = [value: unknown, expect: Expectation];
const TYPE_JUNK: Bad[] = [[1, REFUSED], [true, REFUSED], [[], REFUSED], [{}, REFUSED], [[1], REFUSED], [{ $gt: "" }, REFUSED]];
const NULL_IS_ABSENT: Bad = [null, EITHER]; // an explicit null for an optional field may be read as "absent"

const TOP_LEVEL: Record<string, Bad[]> = {
  model: [...TYPE_JUNK, NULL_IS_ABSENT, [0, REFUSED], [1.5, REFUSED], [["m1"], REFUSED], [{ name: "m1" }, REFUSED], ["", REFUSED], [" ", refused(404)], ["M1", refused(404)], ["m1 ", refused(404)], ["nope", refused(404)], ["../m1", refused(404)], ["m1\u0000", refused(404)], ["x".repeat(1000), refused(400)]],
  messages: [...TYPE_JUNK, [null, REFUSED], ["hi", REFUSED], [{ role: "user", content: "hi" }, REFUSED], [[null], REFUSED], [["hi"], REFUSED], [[[]], REFUSED], [[{}], REFUSED], [[{ role: "user" }], REFUSED], [[{ content: "hi" }], REFUSED]],
  temperature: [["hot", refused(400)], ["1", refused(400)], ["", refused(400)], [true, refused(400)], [[], refused(400)], [{}, refused(400)], [[1], refused(400)], ["NaN", refused(400)], [5, OK], [-1, OK], [1e308, OK], [-1e308, OK], [null, OK]],
  max_tokens: [[-1, refused(400)], [0, refused(400)], [1.5, refused(400)], ["10", refused(400)], [true, refused(400)], [[], refused(400)], [{}, refused(400)], [-1e308, refused(400)], [1e308, EITHER], [2 ** 53, EITHER], [1e6, OK], [null, OK]],
  max_completion_tokens: [[-1, refused(400)], [1.5, refused(400)], ["10", refused(400)], [1e308, EITHER]],
  stream: [["yes", refused(400)], ["true", refused(400)], ["false", refused(400)], [1, refused(400)], [0, refused(400)], [[], refused(400)], [{}, refused(400)], NULL_IS_ABSENT],
  stream_options: [["yes", REFUSED], [1, REFUSED], [[], REFUSED], [true, REFUSED], [{ include_usage: "yes" }, REFUSED], [{ include_usage: 1 }, REFUSED], [null, OK]],
  // FastGPT clients send "" for "no stored chat"
  chatId: [...TYPE_JUNK, NULL_IS_ABSENT, [0, REFUSED], [["a"], REFUSED], ["", EITHER], ["x".repeat(5000), REFUSED]],
  detail: [["yes", REFUSED], [1, REFUSED], [[], REFUSED], [{}, REFUSED], ["true", REFUSED], NULL_IS_ABSENT],
  variables: [[[], REFUSED], [[1, 2], REFUSED], [["a"], REFUSED], ["x", REFUSED], [1, REFUSED], [true, REFUSED], NULL_IS_ABSENT, [{ a: { b: [1, { c: null }] } }, OK]],
  shareId: [[1, REFUSED], [{}, REFUSED], [[], REFUSED], [true, REFUSED], ["", REFUSED]],
  outLinkUid: [[1, REFUSED], [{}, REFUSED], ["", REFUSED]],
  top_p: [["x", EITHER], [{}, EITHER], [-5, EITHER]],
  n: [[1000, EITHER], ["2", EITHER]],
  stop: [[{}, EITHER], [[1, 2], EITHER]],
  tools: [["x", EITHER], [[null], EITHER]],
};
const ROLE: Bad[] = [...TYPE_JUNK, [null, REFUSED], ["", REFUSED], ["USER", REFUSED], ["User", REFUSED], ["wizard", REFUSED], ["user ", REFUSED], [["user"], REFUSED], ["root", REFUSED], ["\u0000user", REFUSED], ["__proto__", REFUSED], ["constructor", REFUSED]];
const CONTENT: Bad[] = [
  [42, REFUSED], [0, REFUSED], [true, REFUSED], [{}, REFUSED], [{ text: "hi" }, REFUSED], [[1], REFUSED], [[null], REFUSED], [["hi"], REFUSED], [[{}], REFUSED],
  [[{ type: "text" }], REFUSED], [[{ type: "text", text: 5 }], REFUSED], [[{ type: "text", text: null }], REFUSED], [[{ type: "image_url" }], REFUSED],
  [[{ type: "image_url", image_url: 5 }], REFUSED], [[{ type: "bogus", text: "x" }], REFUSED], [[{ type: null }], REFUSED], [[{ type: ["text"] }], REFUSED],
  [[{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }], refused(400)], // m1 has no vision
  [null, EITHER], [[], EITHER],
];

function wrongTypes(add: Add, rnd: Random): void {
  const base = () => ({ model: "m1", messages: [{ role: "user", content: "hi" }] as Record<string, unknown>[] });
  // `field`: what an entry replaces; a mix never picks two entries for the same field
  const all: Array<{ field: string; label: string; apply: (b: Record<string, unknown>) => void; expect: Expectation }> = [];
  for (const [field, bads] of Object.entries(TOP_LEVEL)) {
    for (const [value, expect] of bads) all.push({ field, label: `${field}: ${preview(value)}`, apply: (b) => void (b[field] = value), expect });
  }
  for (const [field, bads] of [["role", ROLE], ["content", CONTENT]] as const) {
    for (const [value, expect] of bads) {
      all.push({ field: "messages", label: `messages[0].${field}: ${preview(value)}`, apply: (b) => void (b.messages = [{ role: "user", content: "hi", [field]: value }]), expect });
      all.push({
        field: "messages",
        label: `messages[2].${field} of 4: ${preview(value)}`,
        apply: (b) => {
          const bad = { role: "user", content: "hi", [field]: value };
          b.messages = [{ role: "system", content: "s" }, { role: "user", content: "a" }, bad, { role: "user", content: "b" }];
        },
        expect: field === "content" && expect.kind === "either" ? EITHER : expect,
      });
    }
  }
  all.push({ field: "messages", label: "messages missing", apply: (b) => void delete b.messages, expect: refused(400) });
  for (const one of all) {
    for (const stream of [false, true]) {
      const body: Record<string, unknown> = base();
      if (stream) body.stream = true;
      one.apply(body);
      add("wrong-types", `${one.label}${stream ? " (stream)" : ""}`, body, one.expect);
    }
  }
  // Random mixes of two or three bad fields.
  for (let i = 0; i < 150; i++) {
    const picks: typeof all = [];
    for (let n = rnd.int(2, 3); picks.length < n; ) {
      const pick = rnd.pick(all);
      if (!picks.some((p) => p.field === pick.field)) picks.push(pick);
    }
    const body: Record<string, unknown> = { ...base(), stream: rnd.chance(0.5) };
    picks.forEach((p) => p.apply(body));
    const kinds = picks.map((p) => p.expect.kind);
    const expect = kinds.includes("refused") ? REFUSED : kinds.includes("either") ? EITHER : OK;
    add("wrong-types", `mix: ${picks.map((p) => p.label).join(" + ")}`, body, expect);
  }
}


