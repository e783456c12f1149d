// Billing on every path (docs/api.md#metering): a client that leaves mid-stream and an upstream that cuts
// are billed for the prompt and the output generated up to the cut, exactly once, with the finish
// reason saying why; with a chatId the partial answer is stored.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { RequestRecord } from "../src/observability/observer.js";
import { silentObserver } from "../src/observability/observer.js";
import { countText } from "../src/tokens/counter.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";
import { parseSse, readUntil } from "./support/sse.js";
import { history } from "./support/store-rows.js";

const TEXT = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau";

let upstream: Upstream;
let gw: StartedGateway;
let records: RequestRecord[] = [];
let finished: Array<(r: RequestRecord) => void> = [];
const nextRecord = () => new Promise<RequestRecord>((resolve) => finished.push(resolve));

beforeAll(async () => {
  upstream = await startUpstream({ text: TEXT, chunks: 10, usage: false });
  gw = await startGateway(coreConfig(upstream.url, { routing: { breaker: { failures: 1000 } } }), {
    observerExtra: {
      ...silentObserver,
      requestFinished: (r) => {
        records.push(r);
        finished.splice(0).forEach((resolve) => resolve(r));
      },
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});
beforeEach(() => {
  upstream.reset();
  records = [];
  finished = [];
});

/** The text of the content chunks in SSE text. */
const contentOf = (sse: string) =>
  parseSse(sse)
    .filter((f) => f.data.startsWith("{"))
    .map((f) => JSON.parse(f.data).choices?.[0]?.delta?.content ?? "")
    .join("");

describe("a client that leaves mid-stream", () => {
  it("aborts the upstream at once, bills prompt + the output relayed so far, and stores the partial answer", async () => {
    upstream.behave({ chunkDelayMs: 300 });
    const controller = new AbortController();
    const recorded = nextRecord();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-core-app-key-0001" },
      body: JSON.stringify({ messages: [userMessage("tell me")], stream: true, chatId: "abort-1" }),
      signal: controller.signal,
    });
    const { text } = await readUntil(res, (t) => (t.match(/"content"/g) ?? []).length >= 3);
    const aborted = upstream.waitForAbort();
    controller.abort();
    await aborted;
    const record = await recorded;

    const relayed = contentOf(text);
    expect(record.finishReason).toBe("client_abort");
    expect(record.outputTokens).toBe(countText(relayed));
    expect(record.inputTokens).toBeGreaterThan(0);
    expect(record.points).toBeGreaterThanOrEqual(0);
    const messages = await history(gw.store, "a1", "abort-1", 10);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(messages[1]!.content).toBe(relayed);
    expect(records.filter((r) => r.route.endsWith("/chat/completions"))).toHaveLength(1);
  });
});

describe("an upstream that cuts mid-stream", () => {
  it("ends the stream with an error event and bills the output it sent before the cut, once", async () => {
    upstream.behave({ cutAfterChunks: 4, chunkDelayMs: 5 });
    const recorded = nextRecord();
    const res = await chat(gw.url, { messages: [userMessage("tell me")], stream: true, chatId: "cut-1" });
    const sse = await res.text();
    const record = await recorded;

    expect(JSON.parse(parseSse(sse).at(-1)!.data).error.code).toBe("upstream_error");
    const relayed = contentOf(sse);
    expect(relayed).toBe(TEXT.slice(0, relayed.length));
    expect(record.finishReason).toBe("upstream_error");
    expect(record.outputTokens).toBe(countText(relayed));
    const messages = await history(gw.store, "a1", "cut-1", 10);
    expect(messages[1]!.content).toBe(relayed);
  });
});
