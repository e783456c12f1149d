// An upstream's Retry-After opens a channel's breaker for at most `routing.breaker.maxCooldownMs`
// (default 5 minutes): a real gateway, a real upstream on 127.0.0.1 answering 429 with
// `Retry-After: 999999`, the breaker read back through the operations API and the next client's 503.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { APP_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";

const ADMIN_KEY = "sk-breaker-cap-admin-0001";

let upstream: Server;
let upstreamUrl = "";
let calls = 0;

beforeAll(async () => {
  // every call: 429 with a Retry-After of 11.5 days
  upstream = createServer((req, res) => {
    calls++;
    req.resume();
    req.on("end", () => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "999999" });
      res.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit_error", code: "rate_limited" } }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
});

function capConfig(breaker: Record<string, unknown>): Record<string, unknown> {
  const raw = coreConfig(upstreamUrl, { routing: { maxAttempts: 1, breaker } }) as {
    channels: Array<Record<string, unknown>>;
    apiKeys: unknown[];
  };
  raw.channels[0]!.healthCheck = { intervalMs: 0 };
  raw.apiKeys.push({ name: "root", kind: "admin", key: ADMIN_KEY });
  return raw;
}

async function breakerOf(gw: StartedGateway, channel: string): Promise<{ state: string; retryAt: string | null }> {
  const res = await fetch(`${gw.url}/api/admin/channels`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  const { channels } = (await res.json()) as { channels: Array<{ name: string; breaker: { state: string; retryAt: string | null } }> };
  return channels.find((c) => c.name === channel)!.breaker;
}

describe("an upstream's Retry-After on the breaker", () => {
  it("opens the channel for at most 5 minutes by default, and the next client is told so", async () => {
    const gw = await startGateway(capConfig({ failures: 1, cooldownMs: 1_000 }));
    try {
      const before = Date.now();
      const first = await chat(gw.url, { model: "m1", messages: [userMessage("hi")] }, APP_KEY);
      expect(first.status).toBe(429);
      await first.text();
      const after = Date.now();

      const breaker = await breakerOf(gw, "up");
      expect(breaker.state).toBe("open");
      const openMs = Date.parse(breaker.retryAt!);
      expect(openMs).toBeGreaterThanOrEqual(before + 300_000);
      expect(openMs).toBeLessThanOrEqual(after + 300_000);

      const next = await chat(gw.url, { model: "m1", messages: [userMessage("again")] }, APP_KEY);
      expect(next.status).toBe(503);
      expect(((await next.json()) as { error: { code: string } }).error.code).toBe("model_unavailable");
      expect(Number(next.headers.get("retry-after"))).toBeLessThanOrEqual(300);
      expect(calls).toBe(1);
    } finally {
      await gw.close();
    }
  });

  it("takes routing.breaker.maxCooldownMs as the cap", async () => {
    const gw = await startGateway(capConfig({ failures: 1, cooldownMs: 1_000, maxCooldownMs: 20_000 }));
    try {
      const before = Date.now();
      await (await chat(gw.url, { model: "m1", messages: [userMessage("hi")] }, APP_KEY)).text();
      const openMs = Date.parse((await breakerOf(gw, "up")).retryAt!);
      expect(openMs - before).toBeGreaterThanOrEqual(20_000);
      expect(openMs - Date.now()).toBeLessThanOrEqual(20_000);
    } finally {
      await gw.close();
    }
  });
});
