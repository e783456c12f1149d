// Conversations (docs/api.md#conversations): stored history per (app, chatId) placed before the new message,
// bounded by the app's `history` rounds, isolated per chat and per app, kept across a restart.
import { describe, expect, it } from "vitest";
import { APP2_KEY, APP_KEY, chatOk, gatewayConfig, postChat, useGatewayAndUpstream, useTempDir, user } from "./support/fixtures.js";
import { startGateway } from "./support/gateway.js";
import { history } from "./support/store-rows.js";
import type { UpstreamMessage } from "./support/upstream.js";

const h = useGatewayAndUpstream();

const assistant = (content: string) => ({ role: "assistant", content });

/** One turn: the upstream answers `answer`; returns the messages the upstream was sent. */
async function turn(chatId: string | undefined, question: string, answer: string, key = APP_KEY, url = h.gw.url): Promise<UpstreamMessage[]> {
  h.upstream.behave({ text: answer });
  await chatOk(url, { ...(chatId ? { chatId } : {}), messages: [user(question)] }, key);
  return h.upstream.last().body.messages;
}

describe("conversation history", () => {
  it("sends the stored turns before the new message, bounded by the app's history rounds", async () => {
    expect(await turn("c1", "q1", "a1")).toEqual([user("q1")]);
    expect(await turn("c1", "q2", "a2")).toEqual([user("q1"), assistant("a1"), user("q2")]);
    expect(await turn("c1", "q3", "a3")).toEqual([user("q1"), assistant("a1"), user("q2"), assistant("a2"), user("q3")]);
    // history: 2 rounds = the last 4 stored messages; the first round falls out
    expect(await turn("c1", "q4", "a4")).toEqual([user("q2"), assistant("a2"), user("q3"), assistant("a3"), user("q4")]);
  });

  it("keeps the request's system message first, before the stored history", async () => {
    await turn("sys", "q1", "a1");
    h.upstream.behave({ text: "a2" });
    await chatOk(h.gw.url, { chatId: "sys", messages: [{ role: "system", content: "be brief" }, user("q2")] });
    expect(h.upstream.last().body.messages).toEqual([{ role: "system", content: "be brief" }, user("q1"), assistant("a1"), user("q2")]);
  });

  it("keeps two chatIds of one app apart", async () => {
    await turn("x", "x1", "ax1");
    await turn("y", "y1", "ay1");
    expect(await turn("x", "x2", "ax2")).toEqual([user("x1"), assistant("ax1"), user("x2")]);
    expect(await turn("y", "y2", "ay2")).toEqual([user("y1"), assistant("ay1"), user("y2")]);
  });

  it("treats one chatId under two apps as two conversations", async () => {
    await turn("shared", "from app one", "answer one", APP_KEY);
    expect(await turn("shared", "from app two", "answer two", APP2_KEY)).toEqual([user("from app two")]);
    expect(await turn("shared", "again app one", "answer three", APP_KEY)).toEqual([
      user("from app one"),
      assistant("answer one"),
      user("again app one"),
    ]);
    expect(await history(h.gw.store, "a2", "shared", 100)).toHaveLength(2);
  });

  it("is stateless without a chatId", async () => {
    await turn(undefined, "first", "one");
    expect(await turn(undefined, "second", "two")).toEqual([user("second")]);
  });

  it("stores nothing when the upstream call fails", async () => {
    await turn("fails", "q1", "a1");
    h.upstream.behave({ status: 500 });
    const failed = await postChat(h.gw.url, { chatId: "fails", messages: [user("lost question")] });
    expect(failed.status).toBeGreaterThanOrEqual(500);
    h.upstream.behave({ status: 200 });
    expect(await turn("fails", "q3", "a3")).toEqual([user("q1"), assistant("a1"), user("q3")]);
    expect((await history(h.gw.store, "a1", "fails", 100)).map((m) => m.content)).toEqual(["q1", "a1", "q3", "a3"]);
  });

  it("stores a streamed answer as a turn, and nothing of a stream the upstream cut", async () => {
    h.upstream.behave({ text: "streamed a1", chunks: 3 });
    const streamed = await postChat(h.gw.url, { chatId: "s", stream: true, messages: [user("q1")] });
    expect(await streamed.text()).toMatch(/data: \[DONE\]\n\n$/);
    h.upstream.behave({ text: "never finished", chunks: 4, cutAfterChunks: 2 });
    const cutRes = await postChat(h.gw.url, { chatId: "s", stream: true, messages: [user("cut question")] });
    expect(await cutRes.text()).toContain('"error"');
    h.upstream.behave({ cutAfterChunks: null });
    expect(await turn("s", "q3", "a3")).toEqual([user("q1"), assistant("streamed a1"), user("q3")]);
  });

  it("loses no turn when ten requests on one chatId run at once", async () => {
    h.upstream.behave({ text: "same answer", firstByteDelayMs: 20 });
    const questions = Array.from({ length: 10 }, (_, i) => `parallel ${i}`);
    const responses = await Promise.all(questions.map((q) => postChat(h.gw.url, { chatId: "busy", messages: [user(q)] })));
    expect(responses.map((r) => r.status)).toEqual(questions.map(() => 200));

    const stored = await history(h.gw.store, "a1", "busy", 100);
    expect(stored).toHaveLength(20);
    // every round is whole: a user turn directly followed by its answer
    stored.forEach((m, i) => expect(m.role).toBe(i % 2 === 0 ? "user" : "assistant"));
    expect(stored.filter((m) => m.role === "user").map((m) => m.content).sort()).toEqual([...questions].sort());
  });

  it("answers a non-stream completion with id = chatId", async () => {
    const completion = await chatOk(h.gw.url, { chatId: "my-chat-42", messages: [user("hi")] });
    expect(completion.id).toBe("my-chat-42");
  });
});

describe("conversation history across a restart", () => {
  const tmp = useTempDir("sluice-conv-");

  it("continues a chat stored by a gateway that was closed, from the same SQLite file", async () => {
    const raw = gatewayConfig(h.upstream.url, { sqlitePath: tmp.file("x.db") });
    const first = await startGateway(raw);
    await turn("kept", "before restart", "first answer", APP_KEY, first.url);
    await first.close();

    const second = await startGateway(raw);
    try {
      expect(await turn("kept", "after restart", "second answer", APP_KEY, second.url)).toEqual([
        user("before restart"),
        assistant("first answer"),
        user("after restart"),
      ]);
    } finally {
      await second.close();
    }
  });
});
