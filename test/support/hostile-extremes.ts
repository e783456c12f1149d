// The extreme cases of test/support/hostile-bodies.ts: huge strings, deep nesting, prototype keys,
// invalid UTF-8, giant arrays and odd headers.
import { EITHER, MSG, OK, REFUSED, preview, randomText, refused, type Add, type Expectation, type HostileOptions, type Random } from "./hostile-kit.js";

/** A sanity bound for within-limit bodies of the small gateway (they take well under 100 ms when
 *  the work per byte is constant; 64 KiB of one letter took 1.4 s with a super-linear tokenizer). */
const SIZE_BUDGET_MS = 5000;
/** 128 KiB of one letter in one message must be answered (400 or 2xx) within this: linear work takes
 *  tens of milliseconds, the super-linear tokenizer took about 6 s. */
const LINEAR_BUDGET_MS = 2000;

// ---------------------------------------------------------------------------------------------
// Huge strings, within and beyond the small gateway's body limit.

export function hugeStrings(add: Add, rnd: Random, limit: number): void {
  const letters = (n: number) => Array.from({ length: n }, () => String.fromCharCode(97 + rnd.int(0, 25))).join("");
  const words = (n: number) => Array.from({ length: Math.ceil(n / 6) }, () => letters(5)).join(" ").slice(0, n);
  const kinds: Record<string, (bytes: number) => string> = {
    "one letter repeated": (n) => "a".repeat(n),
    "random letters, no spaces": letters,
    "words": words,
    "4-byte emoji": (n) => "😀".repeat(Math.floor(n / 4)),
    "3-byte CJK": (n) => "汉".repeat(Math.floor(n / 3)),
    "digits": (n) => "7".repeat(n),
  };
  const wrap = (content: string) => `{"model":"m1","messages":[{"role":"user","content":"${content}"}]}`;
  const overhead = wrap("").length;
  const within = [4096, 16384, limit - overhead];
  for (const [kind, make] of Object.entries(kinds)) {
    for (const size of within) {
      const content = make(size);
      const pad = "a".repeat(Math.max(0, size - Buffer.byteLength(content)));
      add("huge-strings", `${kind}, body of ${overhead + size} bytes (limit ${limit})`, wrap(content + pad), EITHER, { budgetMs: SIZE_BUDGET_MS });
    }
  }
  for (const size of [limit - overhead + 1, 2 * limit, 16 * limit, 128 * limit]) {
    for (const chunked of [false, true]) {
      add("huge-strings", `body of ${overhead + size} bytes, over the limit${chunked ? " (chunked)" : ""}`, wrap("b".repeat(size)), refused(413), { chunked });
    }
  }
  add("huge-strings", "128 KiB of one letter (roomy gateway): work must grow linearly", wrap("a".repeat(128 * 1024)), EITHER, { target: "roomy", budgetMs: LINEAR_BUDGET_MS });
  const big = limit - 200;
  add("huge-strings", "huge model name", { model: "m".repeat(big), messages: [{ role: "user", content: "hi" }] }, refused(400)); // past 256 characters (docs/api.md#request-bounds)
  add("huge-strings", "huge chatId", { chatId: "c".repeat(big), messages: [{ role: "user", content: "hi" }] }, refused(400));
  add("huge-strings", "huge role", { messages: [{ role: "u".repeat(big), content: "hi" }] }, refused(400));
  add("huge-strings", "huge unknown key", `{"${"k".repeat(big)}":1,"messages":[${MSG}]}`, EITHER, { budgetMs: SIZE_BUDGET_MS });
  add("huge-strings", "huge number as temperature", `{"messages":[${MSG}],"temperature":1${"0".repeat(big)}}`, REFUSED);
  add("huge-strings", "huge fraction as max_tokens", `{"messages":[${MSG}],"max_tokens":0.${"0".repeat(big)}1}`, REFUSED);
  add("huge-strings", "huge whitespace around a valid body", `${" ".repeat(big >> 1)}{"messages":[${MSG}]}${"\n".repeat(big >> 1)}`, OK, { budgetMs: SIZE_BUDGET_MS });
  add("huge-strings", "huge escaped string", wrap("\\u00e9".repeat(Math.floor((limit - overhead) / 6))), EITHER, { budgetMs: SIZE_BUDGET_MS });
}

// ---------------------------------------------------------------------------------------------
// Deep nesting: past server.maxJsonDepth (64) it is 400 before anything else happens.

type Nest = (depth: number) => string;
const NESTS: Record<string, Nest> = {
  "whole body, arrays": (d) => "[".repeat(d) + "]".repeat(d),
  "whole body, objects": (d) => '{"a":'.repeat(d) + "1" + "}".repeat(d),
  "messages, arrays": (d) => `{"messages":${"[".repeat(d)}${"]".repeat(d)}}`,
  "content parts, arrays": (d) => `{"messages":[{"role":"user","content":${"[".repeat(d)}${"]".repeat(d)}}]}`,
  "pass-through field, objects": (d) => `{"messages":[${MSG}],"metadata":${'{"a":'.repeat(d)}1${"}".repeat(d)}}`,
  "pass-through field, mixed": (d) => `{"messages":[${MSG}],"tools":${'[{"a":'.repeat(d >> 1)}1${"}]".repeat(d >> 1)}}`,
  "variables, objects": (d) => `{"messages":[${MSG}],"variables":{"v":${'{"":'.repeat(d)}1${"}".repeat(d)}}}`,
  "unclosed arrays": (d) => `{"messages":[${MSG}],"x":${"[".repeat(d)}`,
};

export function deepNesting(add: Add, rnd: Random): void {
  const depths = [100, 128, 256, 1000, 4096, 10000, ...Array.from({ length: 18 }, () => rnd.int(100, 10000))];
  for (const depth of depths) {
    for (const [where, nest] of Object.entries(NESTS)) add("deep-nesting", `${where}, depth ${depth}`, nest(depth), refused(400));
  }
  // Just under the limit, and brackets inside strings: these are not deep.
  add("deep-nesting", "pass-through field, depth 30", NESTS["pass-through field, objects"]!(30), OK);
  add("deep-nesting", "variables, depth 30", NESTS["variables, objects"]!(30), OK);
  add("deep-nesting", "brackets inside a string", `{"messages":[{"role":"user","content":"${"[".repeat(1000)}${"]".repeat(1000)}"}]}`, OK);
  add("deep-nesting", "escaped quotes and braces inside a string", `{"messages":[{"role":"user","content":"${'\\"{['.repeat(500)}"}]}`, OK);
  // The roomy gateway reads these whole, so only the depth rule (or the parser) can refuse them.
  add("deep-nesting", "arrays, depth 1,000,000", "[".repeat(1e6) + "]".repeat(1e6), refused(400), { target: "roomy" });
  add("deep-nesting", "objects, depth 200,000", NESTS["pass-through field, objects"]!(200_000), refused(400), { target: "roomy" });
}

// ---------------------------------------------------------------------------------------------
// __proto__, constructor and prototype at every level: never pollution, never a field taken
// from a prototype, never a 5xx.

const PROTO_KEYS = ['"__proto__"', '"constructor"', '"prototype"', '"\\u005f\\u005fproto\\u005f\\u005f"'];
const PAYLOADS = [
  '{"polluted":"yes","stream":true,"isAdmin":true,"role":"system","model":"echo","max_tokens":1,"messages":[]}',
  '{"__proto__":{"polluted":"deep"}}',
  '{"prototype":{"polluted":"yes"}}',
  "[]",
  '"str"',
  "null",
  "1",
];

export function protoKeys(add: Add): void {
  const either: Record<string, (k: string, v: string) => string> = {
    "top level": (k, v) => `{${k}:${v},"messages":[${MSG}]}`,
    "top level, twice": (k, v) => `{${k}:${v},${k}:${v},"messages":[${MSG}]}`,
    "in a message": (k, v) => `{"messages":[{"role":"user","content":"hi",${k}:${v}}]}`,
    "in a content part": (k, v) => `{"messages":[{"role":"user","content":[{"type":"text","text":"hi",${k}:${v}}]}]}`,
    "in variables": (k, v) => `{"messages":[${MSG}],"variables":{${k}:${v}}}`,
    "in stream_options": (k, v) => `{"messages":[${MSG}],"stream":true,"stream_options":{${k}:${v}}}`,
    "deep in a pass-through field": (k, v) => `{"messages":[${MSG}],"metadata":{"a":{"b":{${k}:${v}}}}}`,
  };
  const refusedOnly: Record<string, (k: string) => string> = {
    "the only top-level key, holding messages": (k) => `{${k}:{"messages":[${MSG}]}}`,
    "messages as an object": (k) => `{"messages":{${k}:[${MSG}],"length":1}}`,
    "the only key of a message": (k) => `{"messages":[{${k}:${MSG}}]}`,
    "the only key of a content part": (k) => `{"messages":[{"role":"user","content":[{${k}:{"type":"text","text":"hi"}}]}]}`,
  };
  for (const key of PROTO_KEYS) {
    for (const [where, make] of Object.entries(either)) {
      for (const payload of PAYLOADS) add("proto-keys", `${key} ${where}: ${payload.slice(0, 24)}`, make(key, payload), EITHER);
    }
    for (const [where, make] of Object.entries(refusedOnly)) add("proto-keys", `${key} ${where}`, make(key), refused(400));
  }
}

// ---------------------------------------------------------------------------------------------
// Invalid UTF-8 in strings, keys and between tokens; other encodings of the whole body.

const BAD_UTF8: Array<[string, number[]]> = [
  ["lone continuation 80", [0x80]],
  ["lone continuation bf", [0xbf]],
  ["overlong slash c0 af", [0xc0, 0xaf]],
  ["overlong NUL c0 80", [0xc0, 0x80]],
  ["overlong c1 bf", [0xc1, 0xbf]],
  ["overlong 3-byte e0 80 af", [0xe0, 0x80, 0xaf]],
  ["surrogate ed a0 80", [0xed, 0xa0, 0x80]],
  ["surrogate ed bf bf", [0xed, 0xbf, 0xbf]],
  ["above U+10FFFF f4 90 80 80", [0xf4, 0x90, 0x80, 0x80]],
  ["f5", [0xf5]],
  ["fe", [0xfe]],
  ["ff", [0xff]],
  ["truncated 2-byte c3", [0xc3]],
  ["truncated 3-byte e2 82", [0xe2, 0x82]],
  ["truncated 4-byte f0 9f 98", [0xf0, 0x9f, 0x98]],
  ["raw NUL", [0x00]],
];

export function invalidUtf8(add: Add, rnd: Random): void {
  const at = (text: string, marker: string, bytes: number[]) => {
    const i = text.indexOf(marker);
    return Buffer.concat([Buffer.from(text.slice(0, i)), Buffer.from(bytes), Buffer.from(text.slice(i + marker.length))]);
  };
  const places: Record<string, [string, Expectation]> = {
    "in content": ['{"messages":[{"role":"user","content":"he§llo"}]}', EITHER],
    "in chatId": ['{"chatId":"c§1","messages":[{"role":"user","content":"hi"}]}', EITHER],
    "in a pass-through key": ['{"x§":1,"messages":[{"role":"user","content":"hi"}]}', EITHER],
    "in the model name": ['{"model":"m§1","messages":[{"role":"user","content":"hi"}]}', REFUSED],
    "in the key messages": ['{"mess§ages":[{"role":"user","content":"hi"}]}', REFUSED],
    "in the role": ['{"messages":[{"role":"us§er","content":"hi"}]}', REFUSED],
    "between tokens": ['{"messages":§[{"role":"user","content":"hi"}]}', refused(400)],
    "before the body": ['§{"messages":[{"role":"user","content":"hi"}]}', refused(400)],
    "after the body": ['{"messages":[{"role":"user","content":"hi"}]}§', refused(400)],
  };
  for (const [name, bytes] of BAD_UTF8) {
    for (const [where, [text, expect]] of Object.entries(places)) {
      // a raw NUL inside a string is itself malformed JSON
      const nulInString = bytes[0] === 0 && expect.kind !== "refused";
      add("invalid-utf8", `${name} ${where}`, at(text, "§", bytes), nulInString ? refused(400) : expect);
    }
  }
  for (let i = 0; i < 30; i++) {
    const [name, bytes] = rnd.pick(BAD_UTF8);
    const text = `{"messages":[{"role":"user","content":"${randomText(rnd).replace(/[\u0000-\u001f"\\]/g, "")}§${randomText(rnd).replace(/[\u0000-\u001f"\\]/g, "")}"}],"stream":${rnd.chance(0.5)}}`;
    add("invalid-utf8", `${name} in random content #${i}`, at(text, "§", bytes), bytes[0] === 0 ? refused(400) : EITHER);
  }
  const body = `{"messages":[{"role":"user","content":"héllo 😀"}]}`;
  add("invalid-utf8", "UTF-16LE body", Buffer.from(body, "utf16le"), refused(400));
  add("invalid-utf8", "UTF-16LE body with BOM", Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(body, "utf16le")]), refused(400));
  add("invalid-utf8", "UTF-16BE body with BOM", Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(body, "utf16le").swap16()]), refused(400));
  add("invalid-utf8", "UTF-32LE body", Buffer.from([...body].flatMap((c) => [c.codePointAt(0)! & 0xff, (c.codePointAt(0)! >> 8) & 0xff, c.codePointAt(0)! >> 16, 0])), refused(400));
  add("invalid-utf8", "Latin-1 body", Buffer.from(body.replace("😀", ""), "latin1"), EITHER);
  add("invalid-utf8", "CESU-8 emoji", Buffer.from([...Buffer.from('{"messages":[{"role":"user","content":"'), 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80, ...Buffer.from('"}]}')]), EITHER);
  add("invalid-utf8", "escaped lone high surrogate", '{"messages":[{"role":"user","content":"a\\ud800b"}]}', EITHER);
  add("invalid-utf8", "escaped swapped surrogates", '{"messages":[{"role":"user","content":"\\udc00\\ud800"}]}', EITHER);
  add("invalid-utf8", "escaped NUL in a key", `{"messages\\u0000":[${MSG}],"messages":[${MSG}]}`, EITHER);
}

// ---------------------------------------------------------------------------------------------
// Giant arrays of tiny items, within the roomy gateway's limit.

export function giantArrays(add: Add): void {
  const N = 100_000;
  const many = (item: string) => Array.from({ length: N }, () => item).join(",");
  const roomy = { target: "roomy" as const, budgetMs: 10_000 };
  add("giant-arrays", "100k user messages", `{"messages":[${many('{"role":"user","content":"x"}')}]}`, EITHER, roomy);
  add("giant-arrays", "100k user messages, streamed", `{"stream":true,"messages":[${many('{"role":"user","content":"x"}')}]}`, EITHER, roomy);
  add("giant-arrays", "100k alternating rounds", `{"messages":[${many('{"role":"user","content":"q"},{"role":"assistant","content":"a"}')}]}`, EITHER, roomy);
  add("giant-arrays", "100k system messages", `{"messages":[${many('{"role":"system","content":"s"}')},${MSG}]}`, EITHER, roomy);
  add("giant-arrays", "100k empty contents", `{"messages":[${many('{"role":"user","content":[]}')}]}`, EITHER, roomy);
  add("giant-arrays", "100k content parts", `{"messages":[{"role":"user","content":[${many('{"type":"text","text":"x"}')}]}]}`, EITHER, roomy);
  add("giant-arrays", "100k stop strings", `{"messages":[${MSG}],"stop":[${many('"x"')}]}`, EITHER, roomy);
  add("giant-arrays", "100k variables", `{"messages":[${MSG}],"variables":{${Array.from({ length: N }, (_, i) => `"v${i}":1`).join(",")}}}`, EITHER, roomy);
  add("giant-arrays", "100k null messages", `{"messages":[${many("null")}]}`, refused(400), roomy);
}

// ---------------------------------------------------------------------------------------------
// Odd headers: content types, Authorization values, long and repeated headers, odd paths.

export function oddHeaders(add: Add, rnd: Random, opts: HostileOptions): void {
  const { app, global, hashed } = opts.keys;
  const auth = `Bearer ${app}`;
  const contentTypes: Array<[string | string[] | undefined, Expectation]> = [
    ["application/json; charset=utf-8", OK],
    ["application/json;charset=UTF-8", OK],
    ["APPLICATION/JSON", OK],
    ["Application/Json; Charset=UTF-8", OK],
    ["application/vnd.api+json", EITHER],
    [undefined, EITHER],
    ["", EITHER],
    ["application/json; charset=latin1", EITHER],
    ["application/json, text/plain", EITHER],
    ["application/json;", EITHER],
    ["application/json; " + "x=y; ".repeat(1500), EITHER],
    [["application/json", "text/plain"], EITHER],
    [["text/plain", "application/json"], EITHER],
    ["*/*", EITHER],
    ["application/*", EITHER],
    ["application/jsonx", EITHER],
    ["json", EITHER],
    ["text/plain", refused(415)],
    ["text/html; charset=utf-8", refused(415)],
    ["application/x-www-form-urlencoded", refused(415)],
    ["multipart/form-data; boundary=xyz", refused(415)],
    ["application/xml", refused(415)],
    ["application/octet-stream", refused(415)],
  ];
  const authorizations: Array<[string | string[] | undefined, Expectation]> = [
    [undefined, refused(401)],
    ["", refused(401)],
    ["Bearer", refused(401)],
    ["Bearer ", refused(401)],
    ["Basic dXNlcjpwYXNz", refused(401)],
    [`Token ${app}`, refused(401)],
    [app, refused(401)],
    [`${auth}x`, refused(401)],
    [`Bearer x${app}`, refused(401)],
    [`Bearer ${app.slice(0, -1)}`, refused(401)],
    [`${auth} ${app}`, refused(401)],
    ["Bearer " + "A".repeat(8000), refused(401)],
    ["Bearer " + "\u00ff\u00fe".repeat(50), refused(401)],
    ["Bearer null", refused(401)],
    ["Bearer undefined", refused(401)],
    ["Bearer [object Object]", refused(401)],
    ["Bearer sk-'; DROP TABLE keys;--", refused(401)],
    ["Bearer ../../etc/passwd", refused(401)],
    [`Bearer ${global}`, refused(403)],
    [`bearer ${app}`, EITHER],
    [`BEARER ${app}`, EITHER],
    [`Bearer  ${app}`, EITHER],
    [`Bearer\t${app}`, EITHER],
    [`${auth} `, OK],
    [[auth, "Bearer wrong-key-000"], EITHER],
    [["Bearer wrong-key-000", auth], EITHER],
  ];
  const body = (stream: boolean) => JSON.stringify({ model: "m1", messages: [{ role: "user", content: "hi" }], ...(stream ? { stream: true } : {}) });
  const headersWith = (name: string, value: string | string[] | undefined, base: Record<string, string> = { "content-type": "application/json", authorization: auth }) => {
    const out: Record<string, string | string[]> = { ...base };
    if (value === undefined) delete out[name];
    else out[name] = value;
    return out;
  };
  for (const stream of [false, true]) {
    for (const [value, expect] of contentTypes) add("odd-headers", `content-type ${preview(value)}${stream ? " (stream)" : ""}`, body(stream), expect, { headers: headersWith("content-type", value) });
    for (const [value, expect] of authorizations) add("odd-headers", `authorization ${preview(value)}${stream ? " (stream)" : ""}`, body(stream), expect, { headers: headersWith("authorization", value) });
    add("odd-headers", `hashed key with its app's model${stream ? " (stream)" : ""}`, JSON.stringify({ model: "echo", stream, messages: [{ role: "user", content: "hi" }] }), OK, { headers: headersWith("authorization", `Bearer ${hashed}`) });
    add("odd-headers", `the sha256 digest itself as a key${stream ? " (stream)" : ""}`, body(stream), refused(401), { headers: headersWith("authorization", "Bearer " + "ab".repeat(32)) });
    const extra: Array<[string, string]> = [
      ["x-request-id", "r".repeat(12_000)],
      ["x-request-id", "../../\u00ff\u00fe; drop"],
      ["user-agent", "u".repeat(12_000)],
      ["x-custom", "\u00ff\u00fe\u00fd latin1 bytes"],
      ["accept", "text/html"],
      ["accept", "application/xml;q=0.9, */*;q=0.1"],
      ["accept-encoding", "gzip, br, zstd"],
      ["content-encoding", "identity"],
      ["connection", "close"],
      ["x-forwarded-for", "1.2.3.4, <script>, ::1, 999.999.999.999"],
      ["cookie", "a=" + "c".repeat(8000)],
      ["origin", "null"],
    ];
    for (const [name, value] of extra) add("odd-headers", `${name}: ${preview(value)}${stream ? " (stream)" : ""}`, body(stream), OK, { headers: headersWith(name, value) });
    add("odd-headers", `content-encoding gzip on a plain body${stream ? " (stream)" : ""}`, body(stream), EITHER, { headers: headersWith("content-encoding", "gzip") });
    const many: Record<string, string> = { "content-type": "application/json", authorization: auth };
    for (let i = 0; i < 150; i++) many[`x-h-${i}`] = "v".repeat(rnd.int(1, 40));
    add("odd-headers", `150 extra headers${stream ? " (stream)" : ""}`, body(stream), OK, { headers: many });
    add("odd-headers", `chunked body${stream ? " (stream)" : ""}`, body(stream), OK, { chunked: true });
    for (const path of ["/v1/chat/completions?x=1&x=2", "/api/v1/chat/completions?debug=true"]) add("odd-headers", `path ${path}${stream ? " (stream)" : ""}`, body(stream), OK, { path });
    for (const path of ["/v1/chat/completions/", "//v1/chat/completions", "/v1/chat/completions/../completions", "/v1/chat/%63ompletions", "/v1/chat/completions%00"]) {
      add("odd-headers", `path ${path}${stream ? " (stream)" : ""}`, body(stream), EITHER, { path });
    }
  }
}
