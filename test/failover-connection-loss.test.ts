// A channel that drops the connection before its response headers (reset or close — a model server
// restarting or killed for memory) is failed over like a dead port or a 500
// (docs/api.md#upstream-failures), stream or not: the soak found such attempts answered to the client as
// 502 while the other channel of the model was healthy. Cut after the first byte, a stream still ends with
// an error event, never retried.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startBadUpstream, type BadUpstream } from "./support/bad-upstream.js";
import { APP_KEY, chat, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { parseSse } from "./support/sse.js";
import { startUpstream, UPSTREAM_DEFAULTS, type Upstream } from "./support/upstream.js";

let bad: BadUpstream;
let good: Upstream;
let gw: StartedGateway;

beforeAll(async () => {
  [bad, good] = await Promise.all([startBadUpstream(), startUpstream()]);
});
afterAll(async () => {
  await Promise.all([bad.close(), good.close()]);
});
// a fresh gateway each time: a channel that failed is tried after the others until it answers again
beforeEach(async () => {
  gw = await startGateway({
    // the dropping channel first; a high breaker threshold keeps every request trying it
    channels: [
      { name: "dropping", baseUrl: bad.url, models: ["m"], priority: 2, healthCheck: { intervalMs: 0 } },
      { name: "healthy", baseUrl: good.url, models: ["m"], priority: 1, healthCheck: { intervalMs: 0 } },
    ],
    llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
    apps: [{ id: "app", model: "m" }],
    apiKeys: [{ name: "k", kind: "app", appId: "app", key: APP_KEY }],
    routing: { maxAttempts: 2, breaker: { failures: 100 } },
  });
});
afterEach(async () => {
  await gw.close();
  good.reset();
});

describe("a connection lost before the response headers", () => {
  for (const play of ["reset-at 0", "fin-at 0", "reset-at 5"]) {
    for (const stream of [false, true]) {
      it(`fails over to the next channel (${play}, ${stream ? "stream" : "whole"})`, async () => {
        const res = await chat(gw.url, { messages: [userMessage(`play ${play}`)], stream });
        const text = await res.text();
        expect(res.status).toBe(200);
        const answer = stream ? parseSse(text).map((f) => f.data).filter((d) => d !== "[DONE]").map((d) => JSON.parse(d).choices?.[0]?.delta?.content ?? "").join("") : JSON.parse(text).choices[0].message.content;
        expect(answer).toBe(UPSTREAM_DEFAULTS.text);
        expect(good.requests).toHaveLength(1);
      });
    }
  }

  it("is still an error event, not a retry, once the stream's first byte went out", async () => {
    // reset amid the second content event, the first one relayed
    const at = bad.normalAnswer(true, "m").indexOf("says hi");
    const res = await chat(gw.url, { messages: [userMessage(`play reset-at ${at}`)], stream: true });
    expect(res.status).toBe(200);
    const frames = parseSse(await res.text());
    expect(JSON.parse(frames.at(-1)!.data).error.code).toBe("upstream_error");
    expect(good.requests).toHaveLength(0);
  });
});
