// The SSE relay: bytes pass untouched where nothing needs doing, and every event survives any
// split of the upstream's bytes.
import { describe, expect, it } from "vitest";
import { SseRelay, type RelayOptions } from "../src/stream/sse-relay.js";

const chunk = (content: string | null, finish: string | null = null) =>
  JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }] });
const usage = JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 3, completion_tokens: 4 } });
const upstreamText = [chunk("Hel"), chunk("lo"), chunk(null, "stop"), usage, "[DONE]"].map((d) => `data: ${d}\n\n`).join("");

function run(bytes: string, split: number[], opts: Partial<RelayOptions> = {}) {
  let out = "";
  let first = 0;
  const relay = new SseRelay({ detail: false, includeUsage: false, model: "m", write: (b) => ((out += b.toString()), true), onFirstContent: () => first++, ...opts });
  const buf = Buffer.from(bytes);
  let at = 0;
  for (const cut of [...split, buf.length]) {
    relay.push(buf.subarray(at, cut));
    at = cut;
  }
  relay.finish();
  return { out, relay, first };
}

describe("SSE relay", () => {
  it("relays content chunks byte for byte and hides usage from a client that did not ask", () => {
    const { out, relay, first } = run(upstreamText, []);
    expect(out).toBe([chunk("Hel"), chunk("lo"), chunk(null, "stop")].map((d) => `data: ${d}\n\n`).join(""));
    expect(relay.done).toBe(true);
    expect(relay.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4 });
    expect(relay.finishReason()).toBe("stop");
    expect(relay.text()).toBe("Hello");
    expect(first).toBe(1);
  });

  it("finds the first choice's finish reason from the end, however split, and with n > 1 parses all", () => {
    for (let i = 1; i < upstreamText.length; i += 11) expect(run(upstreamText, [i]).relay.finishReason()).toBe("stop");
    const second = (finish: string) => JSON.stringify({ id: "x", choices: [{ index: 1, delta: {}, finish_reason: finish }] });
    const twoChoices = [chunk("Hi"), chunk(null, "length"), second("stop"), "[DONE]"].map((d) => `data: ${d}\n\n`).join("");
    expect(run(twoChoices, []).relay.finishReason()).toBe("length");
    expect(run(`data: ${chunk("no end")}\n\n`, []).relay.finishReason()).toBeUndefined();
  });

  it("gives the same result however the bytes are split", () => {
    const whole = run(upstreamText, []).out;
    for (let i = 1; i < upstreamText.length; i += 7) {
      const { out, relay } = run(upstreamText, [i, Math.min(i + 3, upstreamText.length)]);
      expect(out).toBe(whole);
      expect(relay.text()).toBe("Hello");
    }
  });

  it("passes usage to a client that asked for it", () => {
    expect(run(upstreamText, [], { includeUsage: true }).out).toContain('"usage"');
  });

  it("accepts CRLF line ends and multi-line data", () => {
    const crlf = upstreamText.replace(/\n/g, "\r\n");
    const { relay } = run(crlf, [5, 40]);
    expect(relay.text()).toBe("Hello");
    expect(relay.done).toBe(true);
  });

  it("relays CRLF and CR line ends as LF however the bytes are split, a CRLF cut in two one line end", () => {
    const lf = run(upstreamText, []).out;
    for (const ends of ["\r\n", "\r"]) {
      const text = upstreamText.replace(/\n/g, ends);
      for (let i = 1; i < text.length; i++) expect(run(text, [i]).out, `${JSON.stringify(ends)} cut at ${i}`).toBe(lf);
      expect(run(text, Array.from({ length: text.length - 1 }, (_, i) => i + 1)).out).toBe(lf);
    }
  });

  it("fails an event over 1 MiB, however it arrives, and relays one just under it", () => {
    const event = (chars: number) => `data: {"choices":[{"index":0,"delta":{"content":"${"x".repeat(chars)}"}}]}\n\n`;
    const pieces = (text: string) => Array.from({ length: Math.floor(text.length / 16_384) }, (_, i) => (i + 1) * 16_384);
    const long = event(1024 * 1024);
    expect(() => run(long, [])).toThrow("sent a stream event larger than 1048576 bytes");
    expect(() => run(long, pieces(long))).toThrow("sent a stream event larger than 1048576 bytes");
    expect(() => run(long, [long.length - 1])).toThrow("larger than 1048576 bytes"); // the blank line cut in two
    const under = `${event(1024 * 1024 - 100)}data: [DONE]\n\n`;
    expect(run(under, pieces(under)).relay.text()).toHaveLength(1024 * 1024 - 100);
  });

  it("writes FastGPT answer events with detail", () => {
    const { out } = run(upstreamText, [], { detail: true });
    expect(out.split("\n\n").filter(Boolean).every((e) => e.startsWith("event: answer\ndata: "))).toBe(true);
  });

  it("throws a gateway error for an upstream error event or invalid JSON", () => {
    expect(() => run(`data: ${chunk("a")}\n\ndata: {"error":{"message":"secret"}}\n\n`, [])).toThrow(/reported an error/);
    expect(() => run(`data: {"usage":{ oops\n\n`, [])).toThrow(/not valid/);
  });

  it("passes `usage: null` chunks (OpenAI's style once usage is asked for) as bytes, unparsed", () => {
    const withNull = (content: string) =>
      JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content }, finish_reason: null }], usage: null });
    const bytes = [withNull("a"), withNull("b"), usage, "[DONE]"].map((d) => `data: ${d}\n\n`).join("");
    const { out, relay } = run(bytes, []);
    expect(out).toBe([withNull("a"), withNull("b")].map((d) => `data: ${d}\n\n`).join(""));
    expect(relay.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4 });
  });

  it("relays nothing after [DONE]", () => {
    const { out } = run(`data: [DONE]\n\ndata: ${chunk("late")}\n\n`, [14]);
    expect(out).toBe("");
  });

  it("makes progress on events followed by blank lines, in detail mode too (it once looped forever)", () => {
    const bytes = [chunk("Hel"), chunk(null, "stop"), "[DONE]"].map((d) => `data: ${d}\n\n\n`).join("");
    const cuts = [...bytes.matchAll(/\n\n\n/g)].map((m) => m.index! + 3);
    const { out, relay } = run(bytes, cuts.slice(0, -1), { detail: true });
    expect(relay.done).toBe(true);
    expect(out.match(/event: answer\ndata: /g)).toHaveLength(2);
    expect(relay.text()).toBe("Hel");
  });

  it.each([
    ["a truncated chunk", `data: {"choices":[{"delta":{"content":"hel\n\n`],
    ["garbage", "data: \u0000\u0001 not json\n\n"],
  ])("fails on %s after relaying the events before it", (_, bad) => {
    const bytes = `data: ${chunk("Hel")}\n\n${bad}data: [DONE]\n\n`;
    expect(() => run(bytes, [])).toThrow(/not valid/);
    let out = "";
    const relay = new SseRelay({ detail: false, includeUsage: false, model: "m", write: (b) => ((out += b.toString()), true), onFirstContent: () => {} });
    expect(() => relay.push(Buffer.from(bytes))).toThrow();
    expect(out).toBe(`data: ${chunk("Hel")}\n\n`);
  });
});
