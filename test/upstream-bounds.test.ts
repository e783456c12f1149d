// Every wait on an upstream has a bound (docs/configuration.md#channels, docs/api.md#upstream-failures): a
// bounded queue per channel, a total deadline, a cap on the answer's size; a client's deep body is the
// client's fault, not the channel's.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RequestRecord } from "../src/observability/observer.js";
import { silentObserver } from "../src/observability/observer.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";
import { parseSse } from "./support/sse.js";

let upstream: Upstream;
let gw: StartedGateway;
const records: RequestRecord[] = [];

beforeAll(async () => {
  upstream = await startUpstream();
  const cfg = coreConfig(upstream.url);
  Object.assign((cfg.channels as Record<string, unknown>[])[0]!, {
    connections: 2,
    maxQueue: 2,
    queueTimeoutMs: 400,
    totalTimeoutMs: 1_500,
    maxAnswerBytes: 64 * 1024,
  });
  gw = await startGateway(cfg, { observerExtra: { ...silentObserver, requestFinished: (r) => records.push(r) } });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});
beforeEach(() => {
  upstream.reset();
  records.length = 0;
});

const metric = async (pattern: RegExp) => pattern.exec(await (await fetch(`${gw.url}/metrics`)).text())?.[1];

describe("client bodies", () => {
  it("refuses JSON nested deeper than maxJsonDepth with 400 before any other work, and does not blame the channel", async () => {
    const deep = `{"messages":[{"role":"user","content":"hi"}],"x":${"[".repeat(6000)}${"]".repeat(6000)}}`;
    const res = await chat(gw.url, deep);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe("json_too_deep");
    expect(upstream.requests).toHaveLength(0);
    expect(await metric(/sluice_channel_up\{channel="up"\} (\d)/)).toBe("1");
  });

  it("still accepts brackets inside strings, however many", async () => {
    const res = await chat(gw.url, { messages: [userMessage(`${"[{".repeat(1000)} \\" ]]]`)] });
    expect(res.status).toBe(200);
  });
});

describe("the channel queue", () => {
  it("holds at most maxQueue requests for a free connection, refuses the rest at once, and times the queue out", async () => {
    upstream.behave({ hang: true });
    const held = [chat(gw.url, { messages: [userMessage("a")] }), chat(gw.url, { messages: [userMessage("b")] })];
    await upstream.waitForRequests(2);
    const queued = [chat(gw.url, { messages: [userMessage("c")] }), chat(gw.url, { messages: [userMessage("d")] })];
    await expect.poll(() => metric(/sluice_channel_queue_depth\{channel="up"\} (\d+)/)).toBe("2");

    const refused = await chat(gw.url, { messages: [userMessage("e")] });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect((await refused.json()).error.code).toBe("channel_busy");

    for (const res of await Promise.all(queued)) {
      expect(res.status).toBe(503);
      expect((await res.json()).error.code).toBe("channel_busy");
    }
    // the hung calls end at the total deadline
    for (const res of await Promise.all(held)) expect(res.status).toBe(504);
    expect(await metric(/sluice_channel_queue_depth\{channel="up"\} (\d+)/)).toBe("0");
  });
});

describe("answer bounds", () => {
  it("cuts a streamed answer past maxAnswerBytes with an error event and bills what was relayed", async () => {
    upstream.behave({ text: "x".repeat(300 * 1024), chunks: 300, chunkDelayMs: 1 });
    const res = await chat(gw.url, { messages: [userMessage("big")], stream: true });
    const frames = parseSse(await res.text());
    expect(JSON.parse(frames.at(-1)!.data).error.code).toBe("upstream_error");
    const record = records.find((r) => r.route.endsWith("/chat/completions"))!;
    expect(record.finishReason).toBe("upstream_error");
    expect(record.outputTokens).toBeGreaterThan(0);
  });

  it("refuses a whole answer past maxAnswerBytes with 502", async () => {
    upstream.behave({ text: "x".repeat(300 * 1024) });
    const res = await chat(gw.url, { messages: [userMessage("big")] });
    expect(res.status).toBe(502);
    expect((await res.json()).error.code).toBe("upstream_error");
  });

  it("cuts an answer that drips past totalTimeoutMs with an upstream_timeout error event", async () => {
    upstream.behave({ chunks: 50, chunkDelayMs: 100 });
    const res = await chat(gw.url, { messages: [userMessage("slow")], stream: true });
    const frames = parseSse(await res.text());
    expect(frames.length).toBeGreaterThan(2);
    expect(JSON.parse(frames.at(-1)!.data).error.code).toBe("upstream_timeout");
  });
});

describe("upstream auth failures", () => {
  it("answers 502 upstream_auth_failed and logs the channel and the upstream's message, redacted", async () => {
    upstream.behave({ status: 401 });
    const res = await chat(gw.url, { messages: [userMessage("hi")] });
    expect(res.status).toBe(502);
    expect((await res.json()).error.code).toBe("upstream_auth_failed");
    const record = records.find((r) => r.route.endsWith("/chat/completions"))!;
    expect(record.channel).toBe("up");
    expect(record.upstreamMessage).toContain("upstream exploded");
    expect(record.upstreamMessage).not.toContain(upstream.url);
  });
});
