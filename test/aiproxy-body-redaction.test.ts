// Redaction of kept bodies reads values, not bytes (docs/fastgpt.md#redaction): 22 shapes a secret
// may take in a request or an answer — JSON escapes, one character per SSE event, base64, the
// caller's key in x-api-key (a key configured by its sha256), secret members in any spelling and
// with any value — and none of the secrets is in the stored detail FastGPT reads, in any encoding
// the test can decode: raw, JSON-escaped, base64, a stream's deltas joined; nor percent-encoded in
// a URL's query.
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createRedactor } from "../src/metered/body-redact.js";
import { APP_KEY, CHANNEL_KEY, GLOBAL_KEY, HASHED_KEY, coreConfig, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-redaction-admin-key-0001";
const STRAY_KEY = "sk-strayKeyNobodyConfigured0123";
const RAW_CHANNEL_KEY = "CFGX-raw-channel-key-0001";
const METRICS_TOKEN = "metrics/token+secret-0001";
const MEMBER_SECRET = "member-secret-value-";
const NUMBER_SECRET = 31415926535897;
/** a key configured by its sha256, that looks like no `sk-` key */
const SHA_KEY = "xk_hashed_caller_key_0001";

/** Every secret of the test; none may be in any detail. */
const SECRETS = [APP_KEY, GLOBAL_KEY, CHANNEL_KEY, HASHED_KEY, SHA_KEY, STRAY_KEY, RAW_CHANNEL_KEY, METRICS_TOKEN];

/** `\uXXXX` for every character; `\u` for the first only. */
const escapeAll = (s: string) => [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
const escapeFirst = (s: string) => `\\u${s.charCodeAt(0).toString(16).padStart(4, "0")}${s.slice(1)}`;
const base64 = (s: string) => Buffer.from(s).toString("base64");
const base64url = (s: string) => Buffer.from(s).toString("base64url");

/** A model server for the channel "raw": it streams the stray key one JSON-escaped character an event. */
let raw: Server;
let upstream: Upstream;
let g: StartedGateway;
beforeAll(async () => {
  upstream = await startUpstream();
  raw = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (const c of `it is ${STRAY_KEY}`) res.write(`data: {"id":"raw-1","object":"chat.completion.chunk","created":1,"model":"m-raw","choices":[{"index":0,"delta":{"content":"${escapeAll(c)}"},"finish_reason":null}]}\n\n`);
      res.end(`data: {"id":"raw-1","object":"chat.completion.chunk","created":1,"model":"m-raw","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
  const config = coreConfig(upstream.url) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>>; apps: Array<Record<string, unknown>>; llmModels: unknown[] };
  config.channels.push({ name: "raw", baseUrl: `http://127.0.0.1:${(raw.address() as AddressInfo).port}`, key: RAW_CHANNEL_KEY, models: ["m-raw"] });
  for (const c of config.channels) c.healthCheck = { intervalMs: 0 };
  config.llmModels.push({ model: "m-raw", maxContext: 4000, maxResponse: 1000 });
  config.apiKeys.push({ name: "fastgpt", kind: "admin", key: ADMIN_KEY }, { name: "sha", kind: "app", appId: "a2", sha256: createHash("sha256").update(SHA_KEY).digest("hex") });
  config.apps[0] = { ...config.apps[0], models: ["m1", "m-raw"], logBodies: "all" };
  // the keys configured by their sha256 (HASHED_KEY, SHA_KEY) are a2's
  config.apps[1] = { id: "a2", model: "m1", logBodies: "all" };
  g = await startGateway({ ...config, routing: { maxAttempts: 1 }, server: { metricsToken: METRICS_TOKEN, bodyLog: { maxBytes: 16384 } } });
});
afterAll(async () => {
  await g?.close();
  await upstream?.close();
  raw?.close();
});

async function admin<T>(path: string): Promise<T> {
  const res = await fetch(g.url + path, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  return ((await res.json()) as { data: T }).data;
}

interface Detail {
  request_body: string;
  response_body: string;
}

/** A call, and its detail once stored, read through the AI Proxy log API as FastGPT reads it. */
async function detailOf(path: string, body: string, headers: Record<string, string>): Promise<Detail> {
  const res = await fetch(g.url + path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.text();
  const requestId = res.headers.get("x-request-id")!;
  let detail: Detail | undefined;
  await vi.waitFor(async () => {
    const [log] = (await admin<{ logs: Array<{ id: number }> }>(`/api/logs/search?request_id=${requestId}`)).logs;
    expect(log).toBeDefined();
    detail = await admin<Detail>(`/api/logs/detail/${log!.id}`);
    expect(detail?.request_body).toBeDefined();
  });
  return detail!;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
/** A chat body with this content and these members beside `messages`, written by hand: its escapes stay. */
const chatBody = (content: string, members = "") => `{"model":"m1",${members}"messages":[{"role":"user","content":"${content}"}]}`;
const messagesBody = (content: string, stream = false) => JSON.stringify({ model: "m1", max_tokens: 50, stream, messages: [userMessage(content)] });

interface Shape {
  name: string;
  call: () => Promise<Detail>;
  /** what the secret-named members held: none of it may stay */
  memberValues?: string[];
}

const shapes: Shape[] = [
  { name: "a configured key, raw", call: () => detailOf("/v1/chat/completions", chatBody(`mine: ${GLOBAL_KEY}`), bearer(APP_KEY)) },
  { name: "an sk- key, its dash JSON-escaped", call: () => detailOf("/v1/chat/completions", chatBody(STRAY_KEY.replace("-", "\\u002d")), bearer(APP_KEY)) },
  { name: "a channel key, its first character JSON-escaped", call: () => detailOf("/v1/chat/completions", chatBody(`key ${escapeFirst(RAW_CHANNEL_KEY)}`), bearer(APP_KEY)) },
  { name: "the caller's key, every character JSON-escaped", call: () => detailOf("/v1/chat/completions", chatBody(escapeAll(APP_KEY)), bearer(APP_KEY)) },
  { name: "the metrics token, its slashes escaped", call: () => detailOf("/v1/chat/completions", chatBody(METRICS_TOKEN.replaceAll("/", "\\/")), bearer(APP_KEY)) },
  { name: "the caller's key in base64", call: () => detailOf("/v1/chat/completions", chatBody(`decode ${base64(APP_KEY)} please`), bearer(APP_KEY)) },
  { name: "a channel key in base64 after a prefix (Basic user:key)", call: () => detailOf("/v1/chat/completions", chatBody(`Basic ${base64(`user:${CHANNEL_KEY}`)}`), bearer(APP_KEY)) },
  { name: "an sk- key in base64url", call: () => detailOf("/v1/chat/completions", chatBody(base64url(`the key=${STRAY_KEY}`)), bearer(APP_KEY)) },
  {
    name: "members api-key, x-api-key, accessToken, client_secret",
    call: () => detailOf("/v1/chat/completions", chatBody("hi", `"api-key":"${MEMBER_SECRET}1","x-api-key":"${MEMBER_SECRET}2","accessToken":"${MEMBER_SECRET}3","client_secret":"${MEMBER_SECRET}4",`), bearer(APP_KEY)),
    memberValues: [1, 2, 3, 4].map((i) => `${MEMBER_SECRET}${i}`),
  },
  {
    name: "secret members in other cases and spellings",
    call: () => detailOf("/v1/chat/completions", chatBody("hi", `"metadata":{"API_KEY":"${MEMBER_SECRET}5","Api-Key":"${MEMBER_SECRET}6","X_API_KEY":"${MEMBER_SECRET}7","ACCESS_TOKEN":"${MEMBER_SECRET}8","ClientSecret":"${MEMBER_SECRET}9","PassWord":"${MEMBER_SECRET}10"},`), bearer(APP_KEY)),
    memberValues: [5, 6, 7, 8, 9, 10].map((i) => `${MEMBER_SECRET}${i}`),
  },
  {
    name: "non-string values under secret members",
    call: () => detailOf("/v1/chat/completions", chatBody("hi", `"metadata":{"password":${NUMBER_SECRET},"token":{"value":"${MEMBER_SECRET}11"},"secret":["${MEMBER_SECRET}12"],"apiKey":true},`), bearer(APP_KEY)),
    memberValues: [String(NUMBER_SECRET), `${MEMBER_SECRET}11`, `${MEMBER_SECRET}12`],
  },
  {
    name: "a secret member's name JSON-escaped",
    call: () => detailOf("/v1/chat/completions", chatBody("hi", `"metadata":{"\\u0061pi_key":"${MEMBER_SECRET}13"},`), bearer(APP_KEY)),
    memberValues: [`${MEMBER_SECRET}13`],
  },
  { name: "the caller's key sent as x-api-key, configured by its sha256", call: () => detailOf("/v1/messages", messagesBody(`my key is ${SHA_KEY}`), { "x-api-key": SHA_KEY }) },
  { name: "the same, in base64", call: () => detailOf("/v1/messages", messagesBody(base64(SHA_KEY)), { "x-api-key": SHA_KEY }) },
  {
    name: "an answer with a key, whole",
    call: () => (upstream.behave({ text: `sure: ${GLOBAL_KEY}`, chunks: 1 }), detailOf("/v1/chat/completions", chatBody("repeat"), bearer(APP_KEY))),
  },
  {
    name: "an answer streaming an sk- key one character an event",
    call: () => (upstream.behave({ text: `sure: ${STRAY_KEY}`, chunks: 6 + STRAY_KEY.length }), detailOf("/v1/chat/completions", chatBody("repeat", `"stream":true,`), bearer(APP_KEY))),
  },
  {
    name: "an answer streaming the caller's key one character an event",
    call: () => (upstream.behave({ text: APP_KEY, chunks: APP_KEY.length }), detailOf("/v1/chat/completions", chatBody("repeat", `"stream":true,`), bearer(APP_KEY))),
  },
  {
    name: "an answer streaming the caller's key in base64, a few characters an event",
    call: () => (upstream.behave({ text: base64(APP_KEY), chunks: 9 }), detailOf("/v1/chat/completions", chatBody("repeat", `"stream":true,`), bearer(APP_KEY))),
  },
  {
    name: "a Messages stream of the sha256-configured caller's key one character an event",
    call: () => (upstream.behave({ text: SHA_KEY, chunks: SHA_KEY.length }), detailOf("/v1/messages", messagesBody("repeat", true), { "x-api-key": SHA_KEY })),
  },
  {
    name: "a stream of JSON-escaped characters, an sk- key one an event",
    call: () => detailOf("/v1/chat/completions", `{"model":"m-raw","stream":true,"messages":[{"role":"user","content":"repeat"}]}`, bearer(APP_KEY)),
  },
  {
    name: "a Responses call with its key and a secret member",
    call: () => (upstream.behave({ text: "fine", chunks: 1 }), detailOf("/v1/responses", JSON.stringify({ model: "m1", input: `key ${APP_KEY}`, metadata: { client_secret: `${MEMBER_SECRET}14` } }), bearer(APP_KEY))),
    memberValues: [`${MEMBER_SECRET}14`],
  },
  {
    name: "a key with an escaped quote and backslash around it",
    call: () => detailOf("/v1/chat/completions", chatBody(`\\"${CHANNEL_KEY}\\\\`), bearer(APP_KEY)),
  },
];

/** Every string a body decodes to — each JSON string, each SSE event's, and the strings of each
 *  member joined across the body (a stream's deltas make a text so) —, and its raw text. */
function decodedTexts(body: string): string[] {
  const strings: string[] = [];
  const byMember = new Map<string, string>();
  const walk = (v: unknown, member: string): void => {
    if (typeof v === "string") {
      strings.push(v);
      byMember.set(member, (byMember.get(member) ?? "") + v);
    } else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) (strings.push(k), walk(x, Array.isArray(v) ? member : k));
  };
  const parse = (text: string) => {
    try {
      walk(JSON.parse(text), "");
    } catch {
      // not JSON: its raw text is searched
    }
  };
  if (body.startsWith("data:") || body.startsWith("event:")) {
    for (const line of body.split("\n")) if (line.startsWith("data:")) parse(line.slice(5));
  } else parse(body);
  return [body, ...strings, ...byMember.values()];
}

/** Whether a text holds a secret: as it is, in any case, or in base64 (either alphabet, any alignment). */
function holds(text: string, secret: string): boolean {
  if (text.toLowerCase().includes(secret.toLowerCase())) return true;
  for (const run of text.match(/[A-Za-z0-9+/_-]{8,}/g) ?? []) {
    for (let from = 0; from < 4; from++) if (Buffer.from(run.slice(from), "base64").toString("latin1").includes(secret)) return true;
  }
  return false;
}

describe("a kept body's secrets, whatever their encoding", () => {
  it("are in no stored detail, over the 22 shapes", async () => {
    // before (the starting commit): 19 of the 22 shapes kept a secret — all but the raw key in a
    // request, in a whole answer, and between an escaped quote and backslash
    const leaks: string[] = [];
    for (const shape of shapes) {
      const detail = await shape.call();
      const texts = [...decodedTexts(detail.request_body), ...decodedTexts(detail.response_body)];
      const secrets = [...SECRETS, ...(shape.memberValues ?? [])];
      const found = secrets.filter((s) => texts.some((t) => holds(t, s)));
      if (found.length) leaks.push(`${shape.name}: ${found.map((s) => `${s.slice(0, 6)}…`).join(", ")}`);
    }
    upstream.reset();
    expect(leaks).toEqual([]);
  });

  it("are in no stored detail where a URL's query holds them percent-encoded", async () => {
    // before: both details kept the token as metrics%2Ftoken%2Bsecret-0001 (its / and + as %2F, %2B)
    const inQuery = (secret: string) => `https://files.example/doc?token=${encodeURIComponent(secret)}&page=2`;
    const request = await detailOf("/v1/chat/completions", chatBody(`fetch ${inQuery(METRICS_TOKEN)}`), bearer(APP_KEY));
    upstream.behave({ text: `it is at ${inQuery(METRICS_TOKEN)}`, chunks: 1 });
    const answer = await detailOf("/v1/chat/completions", chatBody("where"), bearer(APP_KEY));
    upstream.reset();
    const decoded = (body: string) => decodedTexts(body).map((t) => t.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))));
    expect([...decoded(request.request_body), ...decoded(answer.response_body)].filter((t) => holds(t, METRICS_TOKEN))).toEqual([]);
    // the rest of the URL stays
    expect(request.request_body).toContain("https://files.example/doc?token=[redacted]&page=2");
    // a run ends at a backslash: the escaped quote after it stays whole, the body JSON
    const redact = createRedactor([METRICS_TOKEN]);
    expect(redact(`{"a":"x ${encodeURIComponent(METRICS_TOKEN)}\\"y"}`, "json", [], true)).toBe(`{"a":"x [redacted]\\"y"}`);
  });

  it("keeps the rest of each body as it was", async () => {
    const detail = await detailOf("/v1/chat/completions", chatBody(`a ${escapeAll("é")} b ${APP_KEY} c\\n`, `"Api_Key":"${MEMBER_SECRET}15",`), bearer(APP_KEY));
    expect(detail.request_body).toBe(`{"model":"m1","Api_Key":"[redacted]","messages":[{"role":"user","content":"a é b [redacted] c\\n"}]}`);
    upstream.behave({ text: `x ${APP_KEY} y`, chunks: 12 });
    const streamed = await detailOf("/v1/chat/completions", chatBody("repeat", `"stream":true,`), bearer(APP_KEY));
    upstream.reset();
    const deltas = streamed.response_body.split("\n").filter((l) => l.startsWith("data: {")).map((l) => (JSON.parse(l.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "");
    expect(deltas.join("")).toBe("x [redacted] y");
  });
});

describe("a body that is not what it should be", () => {
  const redact = createRedactor([APP_KEY]);
  it("is not kept in clear when it does not parse as JSON", () => {
    expect(redact(`{"content": "\\u0073k-${APP_KEY.slice(3)}`, "json", [], true)).toBe("[not kept: not valid JSON]");
    expect(redact(`not json ${escapeAll(APP_KEY)}`, "json", [], true)).toBe("[not kept: not valid JSON]");
    expect(redact(`data: {"a": "\\u0073"\n\ndata: [DONE]\n\n`, "sse", [], true)).toBe(`data: [not kept: not valid JSON]\n\ndata: [DONE]\n\n`);
  });

  it("read only in part, is redacted as the head of JSON, up to its open string", () => {
    expect(redact(`{"a":"x","password":"hunter2-and-m`, "json", [], false)).toBe(`{"a":"x","password":"[redacted]`);
    expect(redact(`{"a":"its ${escapeAll(APP_KEY)} and mo`, "json", [], false)).toBe(`{"a":"its [redacted] and mo`);
  });
});
