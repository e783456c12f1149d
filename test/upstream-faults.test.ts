// Upstream faults (docs/api.md#upstream-failures): each keeps a failing status and says nothing of the
// h.upstream.
import { createServer } from "node:net";
import { beforeEach, describe, expect, it } from "vitest";
import { startGateway } from "./support/gateway.js";
import { useGateway } from "./support/harness.js";
import { UPSTREAM_SECRET } from "./support/upstream.js";
import { CHANNEL_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";


async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function expectNoLeak(text: string): void {
  expect(text).not.toContain(UPSTREAM_SECRET);
  expect(text).not.toContain(h.upstream.url);
  expect(text).not.toContain("127.0.0.1");
  expect(text).not.toContain(CHANNEL_KEY);
}

const h = useGateway((url) => {
  // this file is about what each failure looks like: the breaker (tested elsewhere) stays closed
  const cfg = coreConfig(url, { routing: { breaker: { failures: 1000 } } });
  (cfg.channels as Record<string, unknown>[])[0]!.firstByteTimeoutMs = 300;
  return cfg;
});
beforeEach(() => h.upstream.reset());

describe("upstream faults", () => {
  it("answers 502 when the model server cannot be reached", async () => {
    const dead = await startGateway(coreConfig(`http://127.0.0.1:${await closedPort()}`));
    try {
      const res = await chat(dead.url, { messages: [userMessage("hi")] });
      expect(res.status).toBe(502);
      const text = await res.text();
      expect(JSON.parse(text).error).toMatchObject({ code: "upstream_error", type: "api_error" });
      expect(text).not.toContain("127.0.0.1");
    } finally {
      await dead.close();
    }
  });

  it("answers 504 when the first byte does not come in time", async () => {
    h.upstream.behave({ hang: true });
    const res = await chat(h.gw.url, { messages: [userMessage("hi")] });
    expect(res.status).toBe(504);
    expect((await res.json()).error.code).toBe("upstream_timeout");
  });

  // docs/api.md#upstream-failures: what the client sees for each upstream status
  it.each([
    [500, 502, "upstream_error", "api_error"],
    [503, 502, "upstream_error", "api_error"],
    [401, 502, "upstream_auth_failed", "api_error"],
    [403, 502, "upstream_auth_failed", "api_error"],
    [429, 429, "upstream_rate_limited", "rate_limit_error"],
  ])("answers upstream HTTP %i as %i %s with no upstream secrets", async (upstreamStatus, status, code, type) => {
    h.upstream.behave({ status: upstreamStatus });
    const res = await chat(h.gw.url, { messages: [userMessage("hi")] });
    expect(res.status).toBe(status);
    const text = await res.text();
    expect(JSON.parse(text).error).toMatchObject({ code, type });
    expectNoLeak(text);
  });

  it("answers an upstream 400 as 400 upstream_rejected with the upstream's own message, redacted", async () => {
    h.upstream.behave({ status: 400 });
    const res = await chat(h.gw.url, { messages: [userMessage("hi")] });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error).toMatchObject({ code: "upstream_rejected", type: "invalid_request_error" });
    expect(body.error.message).toContain("upstream exploded");
    expect(body.error.message).not.toContain(h.upstream.url);
    expect(body.error.message).not.toContain(CHANNEL_KEY);
  });

  it("answers a stream request's upstream error with the status, before any byte is sent", async () => {
    h.upstream.behave({ status: 503 });
    const res = await chat(h.gw.url, { messages: [userMessage("hi")], stream: true });
    expect(res.status).toBe(502);
    expectNoLeak(await res.text());
  });

  it("keeps serving after upstream faults", async () => {
    h.upstream.behave({ status: 500 });
    await (await chat(h.gw.url, { messages: [userMessage("hi")] })).text();
    h.upstream.reset();
    expect((await chat(h.gw.url, { messages: [userMessage("hi")] })).status).toBe(200);
  });

  it("fails over to another channel when one is unreachable", async () => {
    const cfg = coreConfig(h.upstream.url);
    const channels = cfg.channels as Record<string, unknown>[];
    channels.unshift({ name: "dead", baseUrl: `http://127.0.0.1:${await closedPort()}`, models: ["m1"], priority: 10 });
    const failover = await startGateway(cfg);
    try {
      const res = await chat(failover.url, { messages: [userMessage("hi")] });
      expect(res.status).toBe(200);
      const metrics = await (await fetch(`${failover.url}/metrics`)).text();
      expect(metrics).toMatch(/sluice_channel_up\{channel="dead"\} 0/);
    } finally {
      await failover.close();
    }
  });
});
