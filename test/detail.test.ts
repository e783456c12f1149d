// `detail: true` (docs/api.md#completion-report, docs/api.md#streams): the completion report as
// `responseData` on a JSON answer and as FastGPT's `flowResponses` event on a stream; the report's fields
// and the history preview's cutting.
import { describe, expect, it } from "vitest";
import { historyPreview, type ReportItem } from "../src/chat/report.js";
import type { ChatMessage } from "../src/chat/request-schema.js";
import { chatOk, postChat, useGatewayAndUpstream } from "./support/fixtures.js";
import { parseSse } from "./support/sse.js";

const h = useGatewayAndUpstream();

const system = (content: string) => ({ role: "system" as const, content });
const assistant = (content: string) => ({ role: "assistant" as const, content });
const human = (content: string) => ({ role: "user" as const, content });

/** `n` characters: 50 of `head`, filler, 50 of `tail`, so a cut shows which ends it kept. */
const long = (n: number, head: string, tail: string) => head.repeat(50) + "-".repeat(n - 100) + tail.repeat(50);
const cut = (n: number, head: string, tail: string) => `${head.repeat(50)}\n\n...[hide ${n - 100} chars]...\n\n${tail.repeat(50)}`;

async function detailReport(body: Record<string, unknown>): Promise<ReportItem> {
  const completion = await chatOk(h.gw.url, { detail: true, ...body });
  expect(completion.responseData).toHaveLength(1);
  return completion.responseData![0] as ReportItem;
}

describe("detail on a JSON answer", () => {
  it("adds responseData with one chat-node report whose fields match what was sent and answered", async () => {
    h.upstream.behave({ text: "the answer", usage: { prompt_tokens: 40, completion_tokens: 60 } });
    await chatOk(h.gw.url, { chatId: "d1", messages: [human("earlier question")] });
    h.upstream.behave({ firstByteDelayMs: 120 });

    const item = await detailReport({ chatId: "d1", messages: [system("be kind"), human("the question")], temperature: 0.5, max_tokens: 200 });
    const sent = h.upstream.last().body.messages;
    expect(sent).toHaveLength(4); // system, stored round, new question
    expect(item).toEqual({
      moduleType: "chatNode",
      moduleName: expect.stringMatching(/\S/),
      runningTime: expect.any(Number),
      query: "the question",
      textOutput: "the answer",
      tokens: 100,
      inputTokens: 40,
      outputTokens: 60,
      model: "Model One",
      contextTotalLen: 4,
      totalPoints: (2 * (40 + 60)) / 1000,
      temperature: 0.5,
      maxToken: 200,
      historyPreview: [
        { obj: "System", value: "be kind" },
        { obj: "Human", value: "earlier question" },
        { obj: "AI", value: "the answer" },
        { obj: "Human", value: "the question" },
      ],
      finishReason: "stop",
    });
    // seconds, not milliseconds: the upstream took at least 120 ms
    expect(item.runningTime).toBeGreaterThanOrEqual(0.1);
    expect(item.runningTime).toBeLessThan(20);
  });

  it("includes every report field, temperature too, when neither the request nor the app sets a temperature", async () => {
    const item = await detailReport({ messages: [human("no temperature given")] });
    // docs/api.md#completion-report lists `temperature`: reported as null when the model server's
    // default applied
    expect(item.temperature).toBeNull();
    expect(Object.keys(item).sort()).toEqual(
      [
        "moduleType", "moduleName", "runningTime", "query", "textOutput", "tokens", "inputTokens", "outputTokens",
        "model", "contextTotalLen", "totalPoints", "temperature", "maxToken", "historyPreview", "finishReason",
      ].sort(),
    );
  });

  it("prices a model with inputPrice/outputPrice per 1,000 input and output tokens", async () => {
    h.upstream.behave({ usage: { prompt_tokens: 40, completion_tokens: 60 } });
    const item = await detailReport({ model: "m2", messages: [human("hi")] });
    expect(item.model).toBe("Model Two");
    expect(item.totalPoints).toBeCloseTo((3 * 40) / 1000 + (5 * 60) / 1000, 9);
    expect(item.tokens).toBe(100);
  });

  it("takes the query from the last user message and leaves responseData out without detail", async () => {
    const item = await detailReport({ messages: [human("first"), assistant("reply"), human("second")] });
    expect(item.query).toBe("second");
    expect(item.contextTotalLen).toBe(3);
    const plain = await chatOk(h.gw.url, { messages: [human("no detail")] });
    expect(plain).not.toHaveProperty("responseData");
  });

  it("cuts long earlier messages in historyPreview but keeps the first system message and the last two whole", async () => {
    const messages = [
      system(long(150, "s", "S")),
      human(long(150, "u", "U")),
      assistant(long(120, "a", "A")),
      human("short question"),
      assistant(long(130, "b", "B")),
      human(long(140, "q", "Q")),
    ];
    const item = await detailReport({ messages });
    expect(item.historyPreview).toEqual([
      { obj: "System", value: long(150, "s", "S") },
      { obj: "Human", value: cut(150, "u", "U") },
      { obj: "AI", value: cut(120, "a", "A") },
      { obj: "Human", value: "short question" },
      { obj: "AI", value: long(130, "b", "B") },
      { obj: "Human", value: long(140, "q", "Q") },
    ]);
  });
});

describe("detail on a stream", () => {
  it("sends FastGPT's event stream: answer chunks, answer [DONE], then flowResponses with the report", async () => {
    h.upstream.behave({ text: "streamed answer", chunks: 3, usage: { prompt_tokens: 7, completion_tokens: 9 } });
    const res = await postChat(h.gw.url, { stream: true, detail: true, messages: [human("stream it")] });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const frames = parseSse(await res.text());

    const [flow, done, ...rest] = frames.reverse();
    const answers = rest.reverse();
    expect(flow).toEqual({ event: "flowResponses", data: expect.any(String) });
    expect(done).toEqual({ event: "answer", data: "[DONE]" });
    expect(answers.length).toBeGreaterThanOrEqual(3);
    for (const f of answers) expect(f.event).toBe("answer");
    const chunks = answers.map((f) => JSON.parse(f.data) as { object: string; choices: Array<{ delta: { content?: string } }> });
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("streamed answer");

    const report = JSON.parse(flow!.data) as ReportItem[];
    expect(report).toHaveLength(1);
    expect(report[0]).toMatchObject({
      moduleType: "chatNode",
      query: "stream it",
      textOutput: "streamed answer",
      inputTokens: 7,
      outputTokens: 9,
      tokens: 16,
      model: "Model One",
      contextTotalLen: 1,
      totalPoints: (2 * 16) / 1000,
      finishReason: "stop",
      historyPreview: [{ obj: "Human", value: "stream it" }],
    });
  });

  it("has no event: lines without detail, and ends with data: [DONE]", async () => {
    const res = await postChat(h.gw.url, { stream: true, messages: [human("plain stream")] });
    const text = await res.text();
    expect(text).not.toMatch(/^event:/m);
    const frames = parseSse(text);
    expect(frames.every((f) => f.event === undefined)).toBe(true);
    expect(frames.at(-1)?.data).toBe("[DONE]");
  });
});

describe("historyPreview", () => {
  it("keeps values of 100 characters or fewer whole and cuts longer ones to 50 + 50", () => {
    const messages: ChatMessage[] = [human("x".repeat(100)), human(long(101, "h", "t")), human("last but one"), assistant("last")];
    expect(historyPreview(messages).map((p) => p.value)).toEqual(["x".repeat(100), cut(101, "h", "t"), "last but one", "last"]);
  });

  it("keeps only the first system message whole; a later long system message is cut", () => {
    const messages: ChatMessage[] = [
      system(long(300, "f", "F")),
      system(long(200, "g", "G")),
      human("q"),
      assistant("a"),
    ];
    expect(historyPreview(messages)).toEqual([
      { obj: "System", value: long(300, "f", "F") },
      { obj: "System", value: cut(200, "g", "G") },
      { obj: "Human", value: "q" },
      { obj: "AI", value: "a" },
    ]);
  });

  it("keeps the last two messages whole however long they are", () => {
    const messages: ChatMessage[] = [human(long(500, "o", "O")), assistant(long(400, "p", "P")), human(long(300, "r", "R"))];
    expect(historyPreview(messages)).toEqual([
      { obj: "Human", value: cut(500, "o", "O") },
      { obj: "AI", value: long(400, "p", "P") },
      { obj: "Human", value: long(300, "r", "R") },
    ]);
  });
});
