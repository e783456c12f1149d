// CORS for browser apps (docs/api.md#cors, docs/configuration.md#cors): preflight 204 with the allowed
// origin, methods, headers and max age; the origin header on answers, streams and errors alike; `[]` turns
// CORS off.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { useGateway } from "./support/harness.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";

const h = useGateway((url) => coreConfig(url));
const ORIGIN = "https://app.example.com";

const preflight = (url: string, path = "/v1/chat/completions") =>
  fetch(url + path, {
    method: "OPTIONS",
    headers: { origin: ORIGIN, "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
  });

describe("CORS", () => {
  it("answers a preflight with 204 and the allowed origin, methods, headers and max age", async () => {
    for (const path of ["/v1/chat/completions", "/api/v1/chat/completions", "/v1/models"]) {
      const res = await preflight(h.gw.url, path);
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("access-control-allow-methods")).toBe("GET, POST, DELETE, OPTIONS");
      expect(res.headers.get("access-control-allow-headers")).toBe("Authorization, Content-Type, X-Api-Key, Anthropic-Version, Anthropic-Beta, X-Session-Id");
      expect(res.headers.get("access-control-max-age")).toBe("600");
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    }
  });

  it("puts the origin header on answers, streams and errors", async () => {
    const ok = await chat(h.gw.url, { messages: [userMessage("hi")] });
    expect(ok.headers.get("access-control-allow-origin")).toBe("*");
    const stream = await chat(h.gw.url, { messages: [userMessage("hi")], stream: true });
    expect(stream.headers.get("access-control-allow-origin")).toBe("*");
    await stream.text();
    const refused = await chat(h.gw.url, { messages: [userMessage("hi")] }, "sk-wrong-key-000000");
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
  });

  describe("with a list of origins", () => {
    let listed: StartedGateway;
    beforeAll(async () => {
      listed = await startGateway(coreConfig(h.upstream.url, { server: { cors: { origins: [ORIGIN] } } }));
    });
    afterAll(() => listed.close());

    it("allows a listed origin (and says Vary: Origin), not another", async () => {
      const res = await preflight(listed.url);
      expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      expect(res.headers.get("vary")).toBe("Origin");
      const other = await fetch(`${listed.url}/v1/models`, { headers: { origin: "https://evil.example" } });
      expect(other.headers.get("access-control-allow-origin")).toBeNull();
    });
  });

  it("is off with origins []", async () => {
    const off = await startGateway(coreConfig(h.upstream.url, { server: { cors: { origins: [] } } }));
    try {
      expect((await preflight(off.url)).headers.get("access-control-allow-origin")).toBeNull();
      expect((await chat(off.url, { messages: [userMessage("hi")] })).headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await off.close();
    }
  });
});
