// Anthropic message threads (docs/claude-code.md#message-threads) with the real SDK 1.15: its
// toolRunner (which threads by default) and thread() against the gateway, in front of a model server
// that refuses, as vLLM and OpenAI do, a `tool` message answering no tool call. The loop completes
// and every file is written; the model gets the whole conversation every turn; a `continue` naming
// an unknown, expired or another key's message is thread_not_found (the SDK replays under a new
// thread), what Sluice cannot serve is thread_unsupported_request (the runner goes on unthreaded);
// metering, context limits and count_tokens count the stored conversation.
import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fileWriterScript, orphanToolMessage, WRITE_FILE } from "./support/file-writer-upstream.js";
import { CODER, DEV_KEY, THRIFTY_KEY, startMessagesGateway, type ConfigChanges, type MessagesGateway } from "./support/messages-gateway.js";
import { textChunks, type ModelScript } from "./support/scripted-upstream.js";

const FILES = [
  { path: "a.txt", content: "alpha" },
  { path: "b.txt", content: "beta" },
  { path: "c.txt", content: "gamma" },
];
const SYSTEM = "You are a coding agent. Write the files you are asked for.";
const THREADS_BETA = "message-threads-2026-08-12";
const HOUR = 3_600_000;

let g: MessagesGateway | undefined;
let dir = "";
let now = Date.UTC(2026, 11, 1);
afterEach(async () => {
  await g?.close();
  g = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = "";
});

async function start(script: ModelScript = fileWriterScript(FILES), changes?: ConfigChanges): Promise<MessagesGateway> {
  now = Date.UTC(2026, 11, 1);
  g = await startMessagesGateway(script, changes, { clock: () => now });
  dir = mkdtempSync(join(tmpdir(), "sluice-threads-"));
  return g;
}

interface Exchange {
  body: Record<string, unknown> & { thread?: { type: string; previous_message_id?: string }; messages: unknown[] };
  beta: string | null;
  status: number;
  answer: Record<string, unknown>;
}

/** The SDK on the gateway, with every request it sends and what came back. */
function client(key = DEV_KEY): { sdk: Anthropic; sent: Exchange[] } {
  const sent: Exchange[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init);
    const type = res.headers.get("content-type") ?? "";
    const answer = type.includes("json") ? ((await res.clone().json()) as Record<string, unknown>) : {};
    sent.push({ body: JSON.parse(String(init?.body)) as Exchange["body"], beta: new Headers(init?.headers).get("anthropic-beta"), status: res.status, answer });
    return res;
  };
  return { sdk: new Anthropic({ baseURL: g!.url, apiKey: key, maxRetries: 0, fetch: recording as typeof fetch }), sent };
}

/** The tool the model calls: it writes the file in the test's directory. */
function writeFileTool() {
  return betaTool({
    name: WRITE_FILE,
    description: "Write a file",
    inputSchema: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
    run: ({ path, content }) => {
      writeFileSync(join(dir, path), content);
      return `wrote ${path}`;
    },
  });
}

const runnerParams = (stream: boolean) => ({
  model: "claude-sonnet-5",
  max_tokens: 200,
  system: SYSTEM,
  tools: [writeFileTool()],
  messages: [{ role: "user" as const, content: "Write a.txt, b.txt and c.txt." }],
  stream,
});

const written = () => Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), "utf8")]));

/** A raw Messages request. */
async function post(body: unknown, key = DEV_KEY): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${g!.url}/v1/messages`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json", "anthropic-beta": THREADS_BETA }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const created = (messages: unknown[] = [{ role: "user", content: "Write a.txt." }]) => ({
  model: "claude-sonnet-5",
  max_tokens: 100,
  system: SYSTEM,
  tools: [{ name: WRITE_FILE, input_schema: { type: "object" } }],
  messages,
  thread: { type: "create" },
});
const continued = (id: string, messages: unknown[] = [{ role: "user", content: "And again." }]) => ({ model: "claude-sonnet-5", max_tokens: 100, messages, thread: { type: "continue", previous_message_id: id } });

describe("message threads: the SDK's tool runner", () => {
  // Before threads were served, the `continue` reached the model as a lone `tool` message with no
  // system prompt and no tools: this model server answered 400 and the runner threw after writing
  // one file (a lenient server's model, offered no tool, ended the loop there).
  it.each([false, true])("runs the tool loop to its end over a thread (stream: %s), every file written", async (stream) => {
    await start();
    const { sdk, sent } = client();
    const final = await sdk.beta.messages.toolRunner(runnerParams(stream)).runUntilDone();

    expect(final.content).toEqual([{ type: "text", text: "Wrote 3 files." }]);
    expect(written()).toEqual({ "a.txt": "alpha", "b.txt": "beta", "c.txt": "gamma" });
    // what the SDK sent: a create with everything, then continues with only the tool results
    expect(sent.map((s) => [s.status, s.body.thread?.type])).toEqual([
      [200, "create"],
      [200, "continue"],
      [200, "continue"],
      [200, "continue"],
    ]);
    expect(sent.every((s) => s.beta?.includes(THREADS_BETA))).toBe(true);
    for (const s of sent.slice(1)) {
      expect(s.body).not.toHaveProperty("system");
      expect(s.body).not.toHaveProperty("tools");
      expect(s.body.messages).toEqual([{ role: "user", content: [expect.objectContaining({ type: "tool_result" })] }]);
    }
    // what the model got: the whole conversation each turn, with the system prompt and the tool
    const requests = g!.upstream.requests;
    expect(requests).toHaveLength(4);
    for (const [i, r] of requests.entries()) {
      expect(r.body.messages[0]).toEqual({ role: "system", content: SYSTEM });
      expect(r.body.tools).toEqual([expect.objectContaining({ function: expect.objectContaining({ name: WRITE_FILE }) })]);
      expect(r.body.messages).toHaveLength(2 + 2 * i);
      expect(orphanToolMessage(r.body.messages as never)).toBeUndefined();
    }
    expect(requests[3]!.body.messages.slice(1, 4)).toEqual([
      { role: "user", content: "Write a.txt, b.txt and c.txt." },
      { role: "assistant", content: "Writing a.txt.", tool_calls: [{ id: "call_w0", type: "function", function: { name: WRITE_FILE, arguments: JSON.stringify(FILES[0]) } }] },
      { role: "tool", tool_call_id: "call_w0", content: "wrote a.txt" },
    ]);
    // each turn a Messages call like any other: one usage row, the model server's tokens, its points
    expect(g!.rows).toHaveLength(4);
    expect(g!.rows.every((r) => r.keyName === "dev" && r.model === CODER && r.status === 200 && r.inputTokens === 50 && r.outputTokens === 10 && r.points === 0.07)).toBe(true);
  });

  // before: the 300-byte limit was not consulted, and the runner threw on the second turn's 400
  it("goes on unthreaded when a thread cannot be kept (thread_unsupported_request), and still ends the loop", async () => {
    // one stored conversation may take 300 bytes: the create's is larger
    await start(fileWriterScript(FILES), { extra: { responses: { maxBytes: 300 } } });
    const { sdk, sent } = client();
    await sdk.beta.messages.toolRunner(runnerParams(false)).runUntilDone();
    expect(written()).toEqual({ "a.txt": "alpha", "b.txt": "beta", "c.txt": "gamma" });
    expect(sent[0]).toMatchObject({ status: 400, answer: { error: { type: "invalid_request_error", details: { error_code: "thread_unsupported_request", unsupported: ["thread_size"] } } } });
    // then the whole history each turn, without a thread
    expect(sent.slice(1).map((s) => [s.status, s.body.thread, s.body.messages.length])).toEqual([
      [200, undefined, 1],
      [200, undefined, 3],
      [200, undefined, 5],
      [200, undefined, 7],
    ]);
    // the refused request reached no model and wrote no usage row
    expect(g!.upstream.requests).toHaveLength(4);
    expect(g!.rows).toHaveLength(4);
  });
});

describe("message threads: thread_not_found", () => {
  const says = (text: string): ModelScript => () => ({ chunks: textChunks(text), finishReason: "stop", usage: { prompt_tokens: 20, completion_tokens: 3 } });

  // before: 200 — each continue served as a new conversation of one message
  it("for an unknown id and for another key's thread: 404 not_found_error with details.error_code", async () => {
    await start(says("Hello."));
    const first = await post(created());
    expect(first.status).toBe(200);
    for (const [id, key] of [
      ["msg_unknown0000000000000000", DEV_KEY],
      [first.body.id as string, THRIFTY_KEY],
      ["resp_0123", DEV_KEY],
    ] as const) {
      const res = await post(continued(id), key);
      expect(res).toEqual({ status: 404, body: { type: "error", error: { type: "not_found_error", message: expect.stringContaining("thread"), details: { error_code: "thread_not_found" } } } });
    }
    // the owner continues it
    expect((await post(continued(first.body.id as string))).status).toBe(200);
    expect(g!.upstream.requests).toHaveLength(2);
  });

  // before: `dialects` was an unknown config key; without it the third send was a 200 with one message
  it("after dialects.threadTtlHours: the SDK's thread then replays its whole history under a new one", async () => {
    await start(says("Noted."), { extra: { dialects: { threadTtlHours: 2 } } });
    const { sdk, sent } = client();
    const thread = sdk.beta.messages.thread({ model: "claude-sonnet-5", max_tokens: 100, system: SYSTEM });
    const one = await thread.send({ role: "user", content: "first" });
    now += HOUR; // within its time
    const two = await thread.send({ role: "user", content: "second" });
    now += 2 * HOUR + 1; // past it
    await thread.send({ role: "user", content: "third" });
    expect(sent.map((s) => [s.status, s.body.thread])).toEqual([
      [200, { type: "create" }],
      [200, { type: "continue", previous_message_id: one.id }],
      [404, { type: "continue", previous_message_id: two.id }],
      [200, { type: "create" }],
    ]);
    expect(sent[2]!.answer).toMatchObject({ error: { details: { error_code: "thread_not_found" } } });
    expect(sent[3]!.body.messages).toHaveLength(5);
    expect(g!.upstream.requests.at(-1)!.body.messages).toEqual([
      { role: "system", content: SYSTEM },
      { role: "user", content: "first" },
      { role: "assistant", content: "Noted." },
      { role: "user", content: "second" },
      { role: "assistant", content: "Noted." },
      { role: "user", content: "third" },
    ]);
  });
});

describe("message threads: what is refused", () => {
  const says: ModelScript = () => ({ chunks: textChunks("ok"), finishReason: "stop", usage: { prompt_tokens: 20, completion_tokens: 1 } });

  // before: 200 for each, the thread and the tool_addition block dropped
  it("answers thread_unsupported_request for a thread type it does not know and for tool changes", async () => {
    await start(says);
    const fork = await post({ ...created(), thread: { type: "fork" } });
    expect(fork).toEqual({ status: 400, body: { type: "error", error: { type: "invalid_request_error", message: expect.any(String), details: { error_code: "thread_unsupported_request", unsupported: ["thread.type"] } } } });
    const first = await post(created());
    const addition = [{ role: "system", content: [{ type: "tool_addition", tool: { type: "tool_reference", name: "other" } }] }, { role: "user", content: "go" }];
    const res = await post(continued(first.body.id as string, addition));
    expect(res.body.error.details).toEqual({ error_code: "thread_unsupported_request", unsupported: ["tool_addition"] });
    // system or tools on a continue: the thread has its own
    const withSystem = await post({ ...continued(first.body.id as string), system: "other" });
    expect(withSystem).toMatchObject({ status: 400, body: { error: { type: "invalid_request_error", message: expect.stringContaining("system") } } });
    expect(g!.upstream.requests).toHaveLength(1);
  });

  // before: 200, nothing kept
  it("answers thread_unsupported_request once the app keeps as many stored rows as it may", async () => {
    await start(says, { extra: { responses: { maxRowsPerApp: 1 } } });
    expect((await post(created())).status).toBe(200);
    const full = await post(created());
    expect(full).toMatchObject({ status: 400, body: { error: { details: { error_code: "thread_unsupported_request", unsupported: ["thread_quota"] } } } });
    // without a thread, the same request is served
    expect((await post({ ...created(), thread: undefined })).status).toBe(200);
    expect(g!.rows.map((r) => r.status)).toEqual([200, 200]);
  });

  // before: 200, the continue counted without what it continues
  it("counts the stored conversation toward maxContext: a continue that fits alone is refused", async () => {
    await start(says);
    const long = "word ".repeat(1200);
    const first = await post({ ...created([{ role: "user", content: long }]), model: "claude-tiny" });
    expect(first.status).toBe(200);
    const alone = await post({ model: "claude-tiny", max_tokens: 100, messages: [{ role: "user", content: long }] });
    expect(alone.status).toBe(200);
    const res = await post({ ...continued(first.body.id as string, [{ role: "user", content: long }]), model: "claude-tiny" });
    expect(res).toMatchObject({ status: 400, body: { error: { type: "invalid_request_error", message: expect.stringMatching(/^prompt is too long: \d+ tokens > 1999 maximum$/) } } });
  });

  // before: 9 tokens (the new message alone) for 72
  it("count_tokens counts a continue with the conversation it continues", async () => {
    await start(says);
    const first = await post(created());
    const count = async (body: unknown) =>
      ((await (await fetch(`${g!.url}/v1/messages/count_tokens`, { method: "POST", headers: { "x-api-key": DEV_KEY, "content-type": "application/json" }, body: JSON.stringify(body) })).json()) as { input_tokens: number }).input_tokens;
    const whole = await count({ ...created([{ role: "user", content: "Write a.txt." }, { role: "assistant", content: "ok" }, { role: "user", content: "And again." }]), thread: undefined });
    expect(await count(continued(first.body.id as string))).toBe(whole);
    const unknown = await fetch(`${g!.url}/v1/messages/count_tokens`, { method: "POST", headers: { "x-api-key": DEV_KEY, "content-type": "application/json" }, body: JSON.stringify(continued("msg_unknown")) });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { details: { error_code: "thread_not_found" } } });
  });
});
