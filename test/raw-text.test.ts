// Large chat bodies with long contents kept as the client's bytes (src/json/raw-text.ts): what the
// scan gives is what JSON.parse gives, byte lengths are exact, the model gets the same JSON, and
// every malformed body still ends in the whole parse's error.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { parseLarge, parseScanned } from "../src/http/body.js";
import { GatewayError } from "../src/http/errors.js";
import { LARGE_BODY, LONG_TEXT, RawText, jsonBody, releaseRawTexts } from "../src/json/raw-text.js";
import { ECHO_MAX_CHARS } from "../src/demo/echo-channel.js";
import { boundMessage } from "../src/tokens/counter.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { useGateway } from "./support/harness.js";
import { ordinaryText, seeded } from "./support/text-corpus.js";

/** The value with every RawText replaced by its string. */
function decoded(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}

/** Writes `text` as a JSON string the way different clients do: plain, all non-ASCII escaped
 *  (Python's json.dumps), or with some characters escaped without need. */
function literal(text: string, style: number): string {
  const plain = JSON.stringify(text);
  if (style === 0) return plain;
  if (style === 1) return plain.replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return plain.replace(/\//g, "\\/").replace(/e/g, "\\u0065");
}

function body(contents: string[], style: number, extra = ""): Buffer {
  const messages = contents.map((c, i) => `{"role":"${i % 2 ? "assistant" : "user"}", "content" : ${literal(c, style)}}`);
  return Buffer.from(`{"model":"m1",${extra}"messages":[${messages.join(",")}],"stream":false}`);
}

type LargeParse = (buf: Buffer, maxDepth: number, rawTexts: boolean) => Promise<unknown>;
/** A parse of large bodies as readJsonBody runs it for chat (long contents raw), and the error code
 *  it refuses a body with. */
const parsing = (parse: LargeParse) => ({
  parseEither: (buf: Buffer) => parse(buf, 64, true) as Promise<{ messages: Array<{ content: unknown }> }>,
  refusal: (buf: Buffer) =>
    parse(buf, 64, true).then(
      () => "parsed",
      (err: unknown) => (err instanceof GatewayError ? err.code : String(err)),
    ),
});
/** A large body parsed in pieces, long contents raw. */
const { parseEither: parseBig } = parsing(parseLarge);
// From 256 KiB a body is parsed in pieces, under it scanned and parsed whole (http/body.ts): both
// ways, whatever the body's size, give one result.
const BOTH: Array<[string, LargeParse]> = [
  ["in pieces", parseLarge],
  ["scanned and parsed whole", parseScanned],
];

describe.each(BOTH)("a large body's raw texts (%s)", (_, parse) => {
  const { parseEither, refusal } = parsing(parse);

  it("gives what JSON.parse gives, with exact UTF-8 lengths, on a seeded corpus of texts and escapes", async () => {
    const rnd = seeded(7);
    let raws = 0;
    for (let n = 0; n < 60; n++) {
      const contents = Array.from({ length: 1 + rnd(3) }, () => ordinaryText(rnd, [100, LONG_TEXT + 10, 70_000][rnd(3)]!));
      // lone surrogates and escaped pairs too
      if (n % 5 === 0) contents[0] += "\ud800 x \udfff y \ud83d\ude00";
      const buf = body(contents, n % 3, n % 4 === 0 ? `"temperature":0.5, "variables":{"a":"${"v".repeat(20_000)}"},` : "");
      if (buf.length < LARGE_BODY) continue; // parsed whole (http/body.ts)
      const value = await parseEither(buf);
      expect(decoded(value)).toEqual(JSON.parse(buf.toString("utf8")));
      for (const m of value.messages) {
        if (!(m.content instanceof RawText)) continue;
        raws++;
        expect(m.content.bytes).toBe(Buffer.byteLength(m.content.text()));
        expect(boundMessage(m as never)).toBe(boundMessage({ ...m, content: m.content.text() } as never));
      }
    }
    expect(raws).toBeGreaterThan(8);
  });

  it("keeps only long messages[].content strings raw: short contents and strings elsewhere are strings", async () => {
    const long = "word ".repeat(LONG_TEXT);
    const bodies = [
      { messages: [{ role: "user", content: "hi" }], pad: long },
      { messages: [{ role: "user", content: [{ type: "text", text: long }] }] },
      { other: [{ content: long }], messages: [{ role: "user", content: "x" }] },
    ];
    for (const body of bodies) {
      const value = await parseEither(Buffer.from(JSON.stringify(body)));
      expect(value).toEqual(body);
      expect(JSON.stringify(value, (_, v: unknown) => (v instanceof RawText ? "RAW" : v))).not.toContain("RAW");
    }
  });

  it("answers every malformed body 400 invalid_json, as the whole parse does, and a too deep one json_too_deep", async () => {
    const long = "a".repeat(LONG_TEXT * 5);
    const good = `{"messages":[{"role":"user","content":"${long}"}]}`;
    expect((await parseEither(Buffer.from(good))).messages[0]!.content).toBeInstanceOf(RawText);
    const bad = [
      good.replace("aaaa", "a\u0001a"), // a raw control character
      good.replace("aaaa", "a\\xa"), // an unknown escape
      good.replace("aaaa", "a\\u12g4"), // a bad \u escape
      good.slice(0, -3), // cut
      good.replace(`"}]}`, ""), // unterminated string
      good.replace(`"messages":[`, `"messages":[1,`).replace(`}]}`, `}]`), // unbalanced
      good + " x",
    ];
    for (const text of bad) expect(await refusal(Buffer.from(text)), text.slice(0, 60)).toBe("invalid_json");
    // invalid UTF-8 in a content is decoded as JSON.parse decodes it (U+FFFD), and so not kept raw
    const latin = Buffer.concat([Buffer.from(good.slice(0, 100)), Buffer.from([0xff, 0xfe]), Buffer.from(good.slice(100))]);
    const content = (await parseEither(latin)).messages[0]!.content;
    expect(content).toBe(JSON.parse(latin.toString("utf8")).messages[0].content);
    // a repeated key: JSON.parse keeps the last, and so does the result
    const twice = Buffer.from(`{"messages":[{"role":"user","content":"${long}"}],"messages":[{"role":"user","content":"short"}]}`);
    expect(decoded(await parseEither(twice))).toEqual(JSON.parse(twice.toString()));
    const deep = Buffer.from(`{"messages":[{"role":"user","content":"${long}"}],"x":${"[".repeat(70)}${"]".repeat(70)}}`);
    expect(await refusal(deep)).toBe("json_too_deep");
  });
});

describe("jsonBody", () => {
  it("writes raw texts as the client's bytes, and is otherwise JSON.stringify", async () => {
    const text = `caf\u00e9 "quoted" ${"x".repeat(LONG_TEXT * 5)}`;
    const sent = Buffer.from(`{"messages":[{"role":"user","content":${literal(text, 1)}}]}`);
    const raw = (await parseBig(sent)).messages[0]!.content as RawText;
    const payload = { model: "up", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: raw }], max_tokens: 5 };
    const out = jsonBody(payload) as Buffer;
    expect(out.includes("caf\\u00e9")).toBe(true); // the client's escape, not a re-encoding
    expect(JSON.parse(out.toString())).toEqual(JSON.parse(JSON.stringify(payload)));
    expect(jsonBody({ a: 1, messages: [] })).toBe('{"a":1,"messages":[]}');
  });
});

describe.each(BOTH)("the scan of a string (%s)", (_, parse) => {
  const { parseEither, refusal } = parsing(parse);
  it("finds a control character, a quote or an escape at every byte offset and alignment", async () => {
    const rnd = seeded(3);
    for (let n = 0; n < 400; n++) {
      const text = "y".repeat(LONG_TEXT * 4 + rnd(8));
      const at = LONG_TEXT + rnd(64);
      const lead = " ".repeat(rnd(4)); // moves the string against 4-byte words
      const make = (middle: string) => Buffer.from(`${lead}{"messages":[{"role":"user","content":"${text.slice(0, at)}${middle}${text.slice(at)}"}]}`);
      expect(await refusal(make(String.fromCharCode(rnd(0x20))))).toBe("invalid_json");
      const escaped = make(['\\"', "\\n", "\\\\", "\\u00e9"][rnd(4)]!);
      const content = (await parseEither(escaped)).messages[0]!.content as RawText;
      const parsed = JSON.parse(escaped.toString()).messages[0].content as string;
      expect(content.text()).toBe(parsed);
      expect(content.bytes).toBe(Buffer.byteLength(parsed));
      // an unescaped quote ends the string there: the rest is not valid JSON
      expect(await refusal(make('"'))).toBe("invalid_json");
    }
  });
});

describe("a large prompt through the gateway", () => {
  const h = useGateway((url) => {
    const cfg = coreConfig(url);
    for (const m of cfg.llmModels as Record<string, unknown>[]) if (m.model === "echo") m.maxContext = 256_000;
    (cfg.llmModels as Record<string, unknown>[]).push({ model: "big", maxContext: 256_000, maxResponse: 1000 }, { model: "small", maxContext: 30_000, maxResponse: 1000 });
    (cfg.channels as Record<string, unknown>[])[0]!.models = ["m1", "m-vision", "big", "small"];
    (cfg.apps as Record<string, unknown>[])[0]!.models = ["m1", "big", "small", "echo"];
    return cfg;
  });
  beforeEach(() => h.upstream.reset());
  const rnd = seeded(11);
  const long = ordinaryText(rnd, 90_000);

  it("reaches the model with the same content, the system prompt and limits applied", async () => {
    const res = await chat(h.gw.url, { model: "big", messages: [userMessage("first"), { role: "assistant", content: "ok" }, userMessage(long)], max_tokens: 50 });
    expect(res.status).toBe(200);
    const sent = h.upstream.last().body;
    expect(sent.messages.map((m) => m.content)).toEqual(["first", "ok", long]);
    expect(sent.max_tokens).toBe(50);
  });

  it("is counted where its byte bound does not prove the fit, and trimmed or refused as before", async () => {
    // ~90 KB of mixed text on a 30k model: the bound (bytes) fails, the count decides
    const res = await chat(h.gw.url, { model: "small", messages: [userMessage(long)] });
    const tokens = (await import("../src/tokens/counter.js")).countMessage({ role: "user", content: long }, "cl100k_base");
    if (tokens + 1 <= 30_000) expect(res.status).toBe(200);
    else expect((await res.json()).error.code).toBe("context_length_exceeded");
  });

  it("is answered 400 invalid_json when it holds a raw control character", async () => {
    const text = JSON.stringify({ model: "big", messages: [userMessage("x".repeat(LONG_TEXT * 5))] }).replace("xxxx", "x\u0007x");
    const res = await chat(h.gw.url, text);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe("invalid_json");
    expect(h.upstream.requests).toHaveLength(0);
  });

  it("is read by the demo channel (which repeats its first 4 KB) and stored whole for a chatId", async () => {
    const res = await chat(h.gw.url, { model: "echo", chatId: "raw-1", messages: [userMessage(long)] });
    expect(res.status).toBe(200);
    const echoed = `Echo: ${long.slice(0, ECHO_MAX_CHARS)}… (${long.length - ECHO_MAX_CHARS} more characters)`;
    expect((await res.json()).choices[0].message.content).toBe(echoed);
    const again = await chat(h.gw.url, { model: "big", chatId: "raw-1", messages: [userMessage("and now?")] });
    expect(again.status).toBe(200);
    expect(h.upstream.last().body.messages.map((m) => m.content)).toEqual([long, echoed, "and now?"]);
  });
});

describe("a raw text once its request is over", () => {
  it("lets go of the body's bytes: read again, it says so rather than answer from a buffer it no longer holds", async () => {
    const long = "y".repeat(LARGE_BODY);
    const parsed = (await parseScanned(body([long, "short"], 0), 64, true)) as { messages: Array<{ content: unknown }> };
    const raw = parsed.messages[0]!.content as RawText;
    expect(raw).toBeInstanceOf(RawText);
    releaseRawTexts(parsed);
    expect(() => raw.literal()).toThrow(/after its request was over/);
    expect(() => raw.text()).toThrow(/after its request was over/);
    expect(parsed.messages[1]!.content).toBe("short");
    // a text decoded while its request ran is kept (a report or a stored turn may hold it)
    const again = (await parseScanned(body([long], 0), 64, true)) as { messages: Array<{ content: RawText }> };
    expect(again.messages[0]!.content.text()).toBe(long);
    releaseRawTexts(again);
    expect(again.messages[0]!.content.text()).toBe(long);
    // bodies without raw texts, or without messages, are left as they are
    for (const other of [undefined, null, "text", { messages: "x" }, { messages: [null, 1, { content: "s" }] }]) expect(() => releaseRawTexts(other)).not.toThrow();
  });
});

describe("a large prompt's bytes through the gateway", () => {
  let upstream: Upstream;
  let op: OperatorServer;
  let gw: StartedGateway;
  // no quote or backslash in it: a body whose every 8 KB holds a quote is parsed whole (raw-text.ts)
  const long = ordinaryText(seeded(5), 80_000).replace(/["\\]/g, "'");
  beforeAll(async () => {
    upstream = await startUpstream();
    op = await startOperatorServer();
    const cfg = coreConfig(upstream.url, { shareLinks: [{ shareId: "guarded", appId: "a1", authHost: op.url }] });
    (cfg.llmModels as Record<string, unknown>[]).push({ model: "big", maxContext: 256_000, maxResponse: 1000 });
    (cfg.channels as Record<string, unknown>[])[0]!.models = ["m1", "m-vision", "big"];
    (cfg.apps as Record<string, unknown>[])[0]!.models = ["m1", "big"];
    (cfg.apps as Record<string, unknown>[])[0]!.model = "big";
    gw = await startGateway(cfg);
  });
  afterAll(async () => {
    await gw?.close();
    await op?.close();
    await upstream?.close();
  });

  it("are let go once the request is over, whole or streamed, after its turn is stored and its report made", async () => {
    // each request's raw texts are released by the pipeline, after the answer and its settle
    const release = vi.spyOn(RawText.prototype, "release");
    try {
      const whole = await chat(gw.url, { model: "big", chatId: "bytes-1", detail: true, messages: [userMessage(long)] });
      expect(whole.status).toBe(200);
      expect((await whole.json()).responseData[0].query).toBe(long);
      expect(release).toHaveBeenCalledTimes(1);
      const streamed = await chat(gw.url, { model: "big", chatId: "bytes-2", stream: true, detail: true, messages: [userMessage(long)] });
      expect(streamed.status).toBe(200);
      expect(await streamed.text()).toContain("[DONE]");
      expect(release).toHaveBeenCalledTimes(2);
    } finally {
      release.mockRestore();
    }
    // the turns were stored whole: the next request on each chat sends them to the model
    for (const chatId of ["bytes-1", "bytes-2"]) {
      expect((await chat(gw.url, { model: "big", chatId, messages: [userMessage("next")] })).status).toBe(200);
      expect(upstream.last().body.messages[0]!.content).toBe(long);
    }
  });

  it("reach a share link's operator whole in its finish report, sent after the request is over", async () => {
    const res = await chat(gw.url, { messages: [userMessage(long)], shareId: "guarded", outLinkUid: "tok-bytes", chatId: "share-bytes", stream: true }, null);
    expect(res.status).toBe(200);
    await res.text();
    const [finish] = await op.waitForFinish(1);
    const report = (finish!.body as { responseData: Array<{ query: string; historyPreview: Array<{ value: string }> }> }).responseData[0]!;
    expect(report.query).toBe(long);
    expect(report.historyPreview.at(-1)!.value).toBe(long);
  });
});
