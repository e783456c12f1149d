// Streaming (docs/api.md#streams): chunks pass as they arrive, usage hidden unless asked, a client that
// leaves aborts the upstream call, a cut stream ends with an error event.
import { beforeEach, describe, expect, it } from "vitest";
import { startGateway } from "./support/gateway.js";
import { useGateway } from "./support/harness.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";
import { parseSse, readUntil } from "./support/sse.js";

const h = useGateway((url) => coreConfig(url));
beforeEach(() => h.upstream.reset());

const streamBody = (extra: Record<string, unknown> = {}) => ({ messages: [userMessage("hi")], stream: true, ...extra });

describe("streaming", () => {
  it("sends SSE headers and OpenAI chunks ending with [DONE]", async () => {
    const res = await chat(h.gw.url, streamBody());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    const frames = parseSse(await res.text());
    expect(frames.at(-1)!.data).toBe("[DONE]");
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data));
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("Hello from the test upstream. This answer is the same every time.");
  });

  it("hides the usage chunk from a client that did not ask for it", async () => {
    const frames = parseSse(await (await chat(h.gw.url, streamBody())).text());
    expect(frames.some((f) => f.data.includes('"usage"'))).toBe(false);
  });

  it("passes the upstream's usage to a client that asked for it", async () => {
    const frames = parseSse(await (await chat(h.gw.url, streamBody({ stream_options: { include_usage: true } }))).text());
    const usage = frames.map((f) => (f.data === "[DONE]" ? undefined : JSON.parse(f.data).usage)).filter(Boolean);
    expect(usage).toEqual([{ prompt_tokens: 11, completion_tokens: 13, total_tokens: 24 }]);
  });

  it("counts usage for a client that asked when the upstream sends none", async () => {
    h.upstream.behave({ usage: false });
    const frames = parseSse(await (await chat(h.gw.url, streamBody({ stream_options: { include_usage: true } }))).text());
    const usage = frames.map((f) => (f.data === "[DONE]" ? undefined : JSON.parse(f.data).usage)).filter(Boolean);
    expect(usage).toHaveLength(1);
    expect(usage[0].completion_tokens).toBeGreaterThan(0);
    expect(usage[0].prompt_tokens).toBeGreaterThan(0);
  });

  it("delivers the first chunk while the upstream is still generating (no buffering)", async () => {
    h.upstream.behave({ chunkDelayMs: 60_000 }); // the second chunk would come a minute later
    const res = await chat(h.gw.url, streamBody());
    const { text, reader } = await readUntil(res, (t) => t.includes("Hello"));
    expect(text).toContain("data: ");
    await reader.cancel();
  });

  it("aborts the upstream request at once when the client disconnects", async () => {
    h.upstream.behave({ chunkDelayMs: 60_000 });
    const aborted = h.upstream.waitForAbort();
    const controller = new AbortController();
    const res = await fetch(`${h.gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-core-app-key-0001" },
      body: JSON.stringify(streamBody()),
      signal: controller.signal,
    });
    await readUntil(res, (t) => t.includes("data: "));
    controller.abort();
    await aborted; // resolves only when the gateway closed its upstream connection
  });

  it("ends a stream cut mid-way with an error event, not a clean [DONE]", async () => {
    h.upstream.behave({ cutAfterChunks: 2 });
    const frames = parseSse(await (await chat(h.gw.url, streamBody())).text());
    expect(frames.some((f) => f.data === "[DONE]")).toBe(false);
    const last = JSON.parse(frames.at(-1)!.data);
    expect(last.error.code).toBe("upstream_error");
  });

  it("ends with an error event when the upstream goes idle past idleTimeoutMs", async () => {
    const cfg = coreConfig(h.upstream.url);
    (cfg.channels as Record<string, unknown>[])[0]!.idleTimeoutMs = 200;
    const quick = await startGateway(cfg);
    try {
      h.upstream.behave({ chunkDelayMs: 60_000 });
      const frames = parseSse(await (await chat(quick.url, streamBody())).text());
      expect(JSON.parse(frames.at(-1)!.data).error.code).toBe("upstream_timeout");
    } finally {
      await quick.close();
    }
  });

  it("streams the built-in echo channel", async () => {
    const frames = parseSse(await (await chat(h.gw.url, streamBody({ model: "echo", messages: [userMessage("ping pong")] }))).text());
    const text = frames.slice(0, -1).map((f) => JSON.parse(f.data).choices[0]?.delta?.content ?? "").join("");
    expect(text).toBe("Echo: ping pong");
  });
});
