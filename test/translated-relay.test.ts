// The dialects' stream relay reads the common chunk (a piece of text, nothing else) without parsing
// it whole (src/stream/translated-relay.ts). Against JSON.parse, on a seeded corpus of chunks as model
// servers write them — vLLM, llama.cpp, Ollama, Python's spaced JSON — with reasoning, tool calls,
// finishes, usage, errors, every escape, bad escapes, truncations: whenever the quick read answers,
// the chunk parses and holds exactly that delta and nothing else the gateway acts on. Like the chat
// relay, which passes chunks through, it checks a chunk's shape (an object) outside its choices.
import { describe, expect, it } from "vitest";
import type { ChatChunk, StreamTranslator } from "../src/chat/dialect.js";
import { TranslatedRelay, textOnly } from "../src/stream/translated-relay.js";
import { seeded } from "./support/text-corpus.js";

type Rnd = (n: number) => number;
const pick = <T>(rnd: Rnd, xs: readonly T[]): T => xs[rnd(xs.length)]!;

/** Text as a JSON string's inside: plain words, every escape, CJK, emoji, and (rarely) a bad escape. */
function inside(rnd: Rnd): string {
  let out = "";
  for (let i = rnd(6); i >= 0; i--) {
    out += pick(rnd, [
      "word ",
      "你好",
      "😀",
      '\\"',
      "\\\\",
      "\\n",
      "\\t",
      "\\u00e9",
      "\\ud83d\\ude00",
      "\\ud800",
      "\\/",
      '\\"usage\\":{',
      '\\"error\\"',
      "}]}",
      rnd(20) === 0 ? pick(rnd, ["\\x41", "\\u12", "\\a"]) : "",
    ]);
  }
  return out;
}

const DELTAS = [
  (t: string) => `{"content":"${t}"}`,
  (t: string) => `{"role":"assistant","content":"${t}"}`,
  (t: string) => `{"content":"${t}","reasoning_content":null}`,
  (t: string) => `{"reasoning_content":"${t}"}`,
  (t: string) => `{"reasoning":"${t}"}`,
  (t: string) => `{"tool_calls":[{"index":0,"function":{"arguments":"${t}"}}]}`,
  (t: string) => `{"content":"${t}","tool_calls":[]}`,
  () => `{"content":null}`,
  () => `{}`,
];
const TAILS = [',"logprobs":null,"finish_reason":null', ',"finish_reason":null', ',"logprobs":null,"finish_reason":"stop"', ',"finish_reason":"length","stop_reason":null', ""];
const AFTER = ["", ',"usage":null', ',"usage":{"prompt_tokens":3,"completion_tokens":4}', ',"error":{"message":"x"}', ',"system_fingerprint":"fp"'];

function chunk(rnd: Rnd): string {
  const delta = pick(rnd, DELTAS)(inside(rnd));
  const index = rnd(8) === 0 ? 1 : 0;
  let choices = `[{"index":${index},"delta":${delta}${pick(rnd, TAILS)}}]`;
  if (rnd(10) === 0) choices = `[{"index":0,"delta":${delta},"finish_reason":null},{"index":1,"delta":{"content":"other"},"finish_reason":null}]`;
  let text = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":${choices}${pick(rnd, AFTER)}}`;
  // Python's json.dumps: ", " and ": "
  if (rnd(6) === 0) text = text.replace(/":/g, '": ').replace(/,"/g, ', "');
  if (rnd(12) === 0) text = text.slice(0, rnd(text.length));
  return text;
}

function parsed(data: string): ChatChunk | undefined {
  try {
    return JSON.parse(data) as ChatChunk;
  } catch {
    return undefined;
  }
}

describe("the quick read of a text chunk", () => {
  it("answers only for chunks that parse to one choice's text and nothing more, and then with that text", () => {
    const rnd = seeded(20261125);
    let quick = 0;
    for (let i = 0; i < 20_000; i++) {
      const data = chunk(rnd);
      const read = textOnly(data);
      if (read === undefined) continue;
      quick++;
      const full = parsed(data);
      expect(full, data).toBeDefined();
      expect(full!.choices, data).toHaveLength(1);
      const [choice] = full!.choices!;
      expect(choice!.index ?? 0, data).toBe(0);
      expect(choice!.finish_reason ?? null, data).toBeNull();
      expect(Object.keys(choice!.delta!).filter((k) => k !== "role" && k !== "content"), data).toEqual([]);
      expect(full!.usage ?? null, data).toBeNull();
      expect(full!.error, data).toBeUndefined();
      expect(read.choices![0]!.delta, data).toEqual(choice!.delta);
    }
    // the common shapes are read quickly (about 3 % of this corpus, which mostly holds others)
    expect(quick).toBeGreaterThan(300);
  });

  it("checks a chunk's shape as the chat relay does (an object), not every byte outside its choices", () => {
    const choices = '"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]';
    expect(textOnly(`{"id":"c",${choices}}`)?.choices?.[0]?.delta?.content).toBe("x");
    for (const broken of [`{"id":"c",${choices}`, `"id":"c",${choices}}`, `{"id":"c",${choices}}]`, `{"id":"c",${choices.replace("}]", "]")}}`]) {
      expect(textOnly(broken), broken).toBeUndefined();
    }
  });

  it("reads the chunks of vLLM, llama.cpp and Ollama quickly, and parses the rest", () => {
    const vllm = '{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"qwen","choices":[{"index":0,"delta":{"content":" said \\"hi\\"\\n"},"logprobs":null,"finish_reason":null}]}';
    const llamaCpp = '{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"x"}}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}';
    const ollama = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"你好"},"finish_reason":null}]}';
    expect(textOnly(vllm)?.choices?.[0]?.delta?.content).toBe(' said "hi"\n');
    expect(textOnly(ollama)?.choices?.[0]?.delta?.content).toBe("你好");
    // another order of the choice's fields: parsed, the same text
    expect(textOnly(llamaCpp)).toBeUndefined();
  });

  it("relays the same events whether a chunk was read quickly or parsed", () => {
    const seen: ChatChunk[] = [];
    const translator: StreamTranslator = { begin: () => "", chunk: (c) => (seen.push(c), JSON.stringify(c.choices?.[0]?.delta ?? null)), end: () => "", fail: () => "" };
    let written = "";
    const relay = new TranslatedRelay(translator, (t) => ((written += t), true), "m", () => {});
    const frames = [
      '{"choices":[{"index":0,"delta":{"role":"assistant","content":"a\\u00e9"},"logprobs":null,"finish_reason":null}]}',
      '{"choices":[{"index":0,"delta":{"reasoning_content":"think"},"finish_reason":null}]}',
      '{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}',
      '{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3}}',
    ];
    relay.push(Buffer.from(frames.map((f) => `data: ${f}\n\n`).join("") + "data: [DONE]\n\n"));
    expect(seen.map((c) => c.choices?.[0]?.delta ?? null)).toEqual(frames.map((f) => (JSON.parse(f) as ChatChunk).choices?.[0]?.delta ?? null));
    expect(relay.generated()).toBe("aéthinkb");
    expect(relay.finishReason()).toBe("stop");
    expect(relay.usage).toEqual({ prompt_tokens: 2, completion_tokens: 3 });
    expect(relay.done).toBe(true);
    expect(written).not.toBe("");
  });

  it("keeps a character whose bytes arrive in two reads whole (before: two U+FFFD)", () => {
    const translator: StreamTranslator = { begin: () => "", chunk: (c) => c.choices?.[0]?.delta?.content ?? "", end: () => "", fail: () => "" };
    let written = "";
    const relay = new TranslatedRelay(translator, (t) => ((written += t), true), "m", () => {});
    const frame = Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"你好😀"},"finish_reason":null}]}\n\n');
    const inside = frame.indexOf(Buffer.from("好")) + 1;
    relay.push(frame.subarray(0, inside));
    relay.push(frame.subarray(inside, frame.length - 3));
    relay.push(frame.subarray(frame.length - 3));
    expect(relay.generated()).toBe("你好😀");
    expect(written).toBe("你好😀");
  });

  it("fails a chunk with a bad escape as a bad upstream reply, as the parse would", () => {
    const translator: StreamTranslator = { begin: () => "", chunk: () => "", end: () => "", fail: () => "" };
    const relay = new TranslatedRelay(translator, () => true, "m", () => {});
    expect(() => relay.push(Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"\\x41"},"finish_reason":null}]}\n\n'))).toThrow(
      expect.objectContaining({ status: 502, message: "The model server for m sent an answer that is not valid." }),
    );
  });
});
