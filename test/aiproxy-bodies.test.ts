// The bodies FastGPT's log detail shows (docs/fastgpt.md#bodies): kept per app (`apps[].logBodies`),
// the request as received and the answer as sent, whole or streamed, with every secret redacted,
// cut at server.bodyLog.maxBytes (retention: the Store contract, test/support/store-contract-channels.ts).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { APP_KEY, CHANNEL_KEY, HASHED_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";
import { SPEECH_WAV, startAudioUpstream } from "./support/audio-upstream.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { createRedactor } from "../src/metered/body-redact.js";

const ADMIN_KEY = "sk-aiproxy-bodies-admin-01";
const STRAY_KEY = "sk-someoneelsesKey0123456789";

let upstream: Upstream;
let g: StartedGateway;
beforeAll(async () => {
  upstream = await startUpstream();
  const config = coreConfig(upstream.url) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>>; apps: Array<Record<string, unknown>> };
  config.apiKeys.push({ name: "fastgpt", kind: "admin", key: ADMIN_KEY });
  for (const c of config.channels) c.healthCheck = { intervalMs: 0 };
  config.apps[0]!.logBodies = "all";
  config.apps[1] = { id: "a2", model: "m1", logBodies: "errors" };
  g = await startGateway({ ...config, routing: { maxAttempts: 1 }, server: { bodyLog: { maxBytes: 512 } } });
});
afterAll(async () => {
  await g?.close();
  await upstream?.close();
});

async function admin<T>(path: string): Promise<{ status: number; success: boolean; message?: string; data: T }> {
  const res = await fetch(g.url + path, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  return { status: res.status, ...((await res.json()) as { success: boolean; message?: string; data: T }) };
}
interface Detail {
  id: number;
  log_id: number;
  request_body: string;
  response_body: string;
  request_body_truncated: boolean;
  response_body_truncated: boolean;
}
/** The log id of the request with this x-request-id, once its usage row is written. */
async function logIdOf(requestId: string): Promise<number> {
  let id = 0;
  await vi.waitFor(async () => {
    const logs = (await admin<{ logs: Array<{ id: number }> }>(`/api/logs/search?request_id=${requestId}`)).data.logs;
    expect(logs).toHaveLength(1);
    id = logs[0]!.id;
  });
  return id;
}
/** The log's bodies, once written (after the answer is over, after the usage row). */
async function detailOf(requestId: string): Promise<{ status: number; success: boolean; message?: string; data: Detail }> {
  const id = await logIdOf(requestId);
  let detail: Awaited<ReturnType<typeof admin<Detail>>> | undefined;
  await vi.waitFor(async () => {
    detail = await admin<Detail>(`/api/logs/detail/${id}`);
    expect(detail.status).toBe(200);
  });
  return detail!;
}

describe("apps[].logBodies: all", () => {
  it("keeps a whole answer's request and answer, with the caller's key, channel keys, secret members and sk- keys redacted", async () => {
    const res = await chat(g.url, { model: "m1", api_key: "member-secret-value", messages: [userMessage(`my keys: ${APP_KEY} ${CHANNEL_KEY} ${STRAY_KEY}`)], metadata: { Password: "hunter2-secret" } });
    expect(res.status).toBe(200);
    await res.text();
    const detail = await detailOf(res.headers.get("x-request-id")!);
    expect(detail).toMatchObject({ status: 200, success: true, data: { request_body_truncated: false, response_body_truncated: false } });
    const { request_body, response_body } = detail.data;
    for (const secret of [APP_KEY, CHANNEL_KEY, STRAY_KEY, "member-secret-value", "hunter2-secret"]) expect(request_body).not.toContain(secret);
    expect(request_body).toContain(`"api_key":"[redacted]"`);
    expect(request_body).toContain(`my keys: [redacted] [redacted] [redacted]`);
    expect(JSON.parse(response_body)).toMatchObject({ object: "chat.completion", choices: [{ message: { content: expect.stringContaining("Hello from the test upstream") } }] });
  });

  it("keeps a stream's SSE text as sent, and cuts a long body at server.bodyLog.maxBytes, marked", async () => {
    const res = await chat(g.url, { model: "m1", stream: true, messages: [userMessage("é".repeat(600))] });
    expect(res.status).toBe(200);
    await res.text();
    const { data } = await detailOf(res.headers.get("x-request-id")!);
    expect(data.response_body).toMatch(/^data: /);
    expect(data.request_body_truncated).toBe(true);
    expect(Buffer.byteLength(data.request_body)).toBeLessThanOrEqual(512);
    expect(data.request_body.endsWith("...")).toBe(true);
    expect(data.request_body).not.toContain("\uFFFD");
  });
});

describe("a kept request: the bytes as they came", () => {
  it("keeps the request's own text, its spacing too, redacted: not the parse written out again", async () => {
    const sent = `{\n  "model": "m1",\n  "api_key" : "member-secret-value",\n  "messages": [ {"role": "user", "content": "key ${APP_KEY}"} ]\n}`;
    const res = await chat(g.url, sent);
    expect(res.status).toBe(200);
    await res.text();
    const { data } = await detailOf(res.headers.get("x-request-id")!);
    expect(data.request_body).toBe(`{\n  "model": "m1",\n  "api_key" : "[redacted]",\n  "messages": [ {"role": "user", "content": "key [redacted]"} ]\n}`);
    expect(data.request_body_truncated).toBe(false);
  });

  it("marks a request read only in part as cut, even where redaction made what was read short, and drops its last word", async () => {
    // 25 keys of 100 characters: only the first four times server.bodyLog.maxBytes (512) are read,
    // which redaction makes shorter than the cut; the key read in part is dropped, not kept
    const keys = Array.from({ length: 25 }, (_, i) => `sk-${String(i).padStart(2, "0")}${"k".repeat(95)}`);
    const res = await chat(g.url, { model: "m1", messages: [userMessage(keys.join(" "))] });
    expect(res.status).toBe(200);
    await res.text();
    const { data } = await detailOf(res.headers.get("x-request-id")!);
    expect(data.request_body_truncated).toBe(true);
    expect(Buffer.byteLength(data.request_body)).toBeLessThanOrEqual(512);
    expect(data.request_body).toMatch(/\[redacted\] \.\.\.$/);
    expect(data.request_body).not.toMatch(/sk-\d/);
  });
});

describe("redaction", () => {
  it("redacts each of thousands of configured secrets, a secret holding another whole, and characters of regular expressions as themselves", () => {
    const secrets = [...Array.from({ length: 5000 }, (_, i) => `channel-key-${i}-x`), "p.a+s(s)[w]o*r?d$^|\\", "short-secret", "short-secret-longer"];
    const redact = createRedactor(secrets);
    expect(redact("a channel-key-4999-x b p.a+s(s)[w]o*r?d$^|\\ c short-secret-longer d short-secret", "text", [], true)).toBe("a [redacted] b [redacted] c [redacted] d [redacted]");
    expect(redact("pxa+s(s)[w]o*r?d channel-key-5000-x", "text", [], true)).toBe("pxa+s(s)[w]o*r?d channel-key-5000-x");
  });

  it("redacts the caller's key where the config does not hold it", () => {
    expect(createRedactor([])("key: k-created-by-api", "text", ["k-created-by-api"], true)).toBe("key: [redacted]");
  });
});

describe("apps[].logBodies: errors", () => {
  it("keeps the bodies of a failed call only", async () => {
    const ok = await chat(g.url, { model: "m1", messages: [userMessage("fine")] }, HASHED_KEY);
    expect(ok.status).toBe(200);
    await ok.text();
    const okId = await logIdOf(ok.headers.get("x-request-id")!);
    upstream.behave({ status: 503 });
    const failed = await chat(g.url, { model: "m1", messages: [userMessage("breaks")] }, HASHED_KEY);
    upstream.behave({ status: 200 });
    expect(failed.status).toBe(502);
    const detail = await detailOf(failed.headers.get("x-request-id")!);
    expect(detail.data.response_body).toContain('"code":"upstream_error"');
    expect(detail.data.request_body).toContain("breaks");
    // bodies are written in the order the answers ended: the success before it kept none
    expect(await admin(`/api/logs/detail/${okId}`)).toMatchObject({ status: 404, success: false, message: "record not found" });
  });
});

describe("an upload's bodies", () => {
  it("keeps a transcription's form fields as JSON and its file by name and size", async () => {
    const audio = await startAudioUpstream();
    const gw = await startGateway({
      channels: [
        { name: "audio", baseUrl: audio.url, models: ["whisper-1"], healthCheck: { intervalMs: 0 } },
        { name: "demo", type: "echo", models: ["echo"] },
      ],
      llmModels: [{ model: "echo" }],
      whisperModel: { model: "whisper-1" },
      apps: [{ id: "t", model: "echo", models: ["echo", "whisper-1"], logBodies: "all" }],
      apiKeys: [
        { name: "t-key", kind: "app", appId: "t", key: "sk-transcribing-key-0001" },
        { name: "fastgpt", kind: "admin", key: ADMIN_KEY },
      ],
    });
    try {
      const form = new FormData();
      form.set("model", "whisper-1");
      form.set("language", "en");
      form.set("file", new Blob([new Uint8Array(SPEECH_WAV)]), "a.wav");
      const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: "POST", body: form, headers: { authorization: "Bearer sk-transcribing-key-0001" } });
      expect(res.status).toBe(200);
      await res.text();
      const requestId = res.headers.get("x-request-id")!;
      const get = async (path: string) => (await fetch(gw.url + path, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).json() as Promise<{ data: { logs: Array<{ id: number }>; request_body: string } }>;
      let detail: { request_body: string } | undefined;
      await vi.waitFor(async () => {
        const id = (await get(`/api/logs/search?request_id=${requestId}`)).data.logs[0]!.id;
        detail = (await get(`/api/logs/detail/${id}`)).data;
        expect(detail.request_body).toBeDefined();
      });
      expect(JSON.parse(detail!.request_body)).toEqual({ model: "whisper-1", language: "en", file: `a.wav, ${SPEECH_WAV.length} bytes` });
    } finally {
      await gw.close();
      await audio.close();
    }
  });
});

describe("a response's bodies once it is closed", () => {
  it("leave nothing of the capture on the response: its own write and end, no listener of ours", async () => {
    const { createServer, ServerResponse } = await import("node:http");
    const { bodyTap } = await import("../src/metered/body-capture.js");
    const { answerOut, teeAnswer } = await import("../src/http/answer-out.js");
    const saved: Array<{ request: string; response: string }> = [];
    const seen: Array<{ write: unknown; end: unknown; closeListeners: number; before: number }> = [];
    const server = createServer((req, res) => {
      const before = res.listenerCount("close");
      const event = { runtime: { node: { req, res } }, req: { headers: new Headers({ authorization: `Bearer ${APP_KEY}` }) }, context: {} };
      const deps = { store: { saveBodies: async (b: { request: string; response: string }) => void saved.push(b) }, redact: createRedactor([]), maxBytes: 1024, retentionMs: 60_000 };
      // the body tap, as the pipeline runs it: opened, told who asks, then the answer written through the pipeline's writer
      const request = { caller: { app: { logBodies: "all" } }, requestText: () => Buffer.from('{"q":1}'), inbound: { headers: event.req.headers }, facts: { channel: "up", requestId: "r-1" }, time: Date.now() };
      const probe = bodyTap(deps as never, [{ logBodies: "all" }]).open(request as never)!;
      probe.identified!(request as never);
      teeAnswer(event as never, { written: (chunk) => probe.written!(chunk), closed: (status, type) => probe.answered!(status, type) });
      res.once("close", () => setImmediate(() => seen.push({ write: res.write, end: res.end, closeListeners: res.listenerCount("close"), before })));
      res.setHeader("content-type", "application/json");
      const out = answerOut(event as never)!;
      out.write('{"a":');
      out.write("2}");
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as import("node:net").AddressInfo;
      expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('{"a":2}');
      await vi.waitFor(() => expect(seen).toHaveLength(1));
      expect(saved).toEqual([expect.objectContaining({ request: '{"q":1}', response: '{"a":2}' })]);
      // what was patched is the response's own again, and the capture's "close" listener is gone
      expect(seen[0]!.write).toBe(ServerResponse.prototype.write);
      expect(seen[0]!.end).toBe(ServerResponse.prototype.end);
      expect(seen[0]!.closeListeners).toBe(seen[0]!.before);
    } finally {
      server.close();
    }
  });
});
