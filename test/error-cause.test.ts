// A GatewayError keeps the error it stands for as its ES2022 `cause` (docs/architecture.md#errors):
// the transport's error under an upstream failure, the unknown error under a 500; never in the
// answer, and in a log line only by its name, code, message and stack.
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayError, errorResponse, toGatewayError } from "../src/http/errors.js";
import { errorFields } from "../src/observability/logger.js";
import { mapTransportError } from "../src/upstream/errors.js";
import { coreConfig, chat, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";

const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });

describe("GatewayError's cause", () => {
  it("is kept by the errors that wrap another, and absent when there is none", () => {
    const transport = refused();
    // before: undefined (the transport's error was dropped)
    expect(mapTransportError(transport, "m1").cause).toBe(transport);
    const bug = new TypeError("x is not a function");
    expect(mapTransportError(bug, "m1")).toMatchObject({ status: 500, code: "internal_error", cause: bug });
    expect(toGatewayError(bug).cause).toBe(bug);
    expect("cause" in new GatewayError(400, "invalid_request", "no")).toBe(false);
  });

  it("never reaches the answer", async () => {
    const err = new GatewayError(503, "store_unavailable", "retry shortly", { cause: new Error("password authentication failed for sk-secret-0001") });
    const text = await errorResponse(err).text();
    expect(text).not.toContain("sk-secret");
    expect(JSON.parse(text)).toEqual({ error: { message: "retry shortly", type: "upstream_error", code: "store_unavailable", param: null } });
    expect(JSON.stringify(err)).not.toContain("sk-secret");
  });

  it("is told in a log line by its name, code, message and stack only", () => {
    const cause = Object.assign(refused(), { request: { headers: { authorization: "Bearer sk-secret-0001" } } });
    const fields = errorFields(new GatewayError(500, "internal_error", "Internal server error", { cause }));
    // before: no cause at all
    expect(fields.cause).toEqual({ type: "Error", code: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:9", stack: cause.stack });
    expect(JSON.stringify(fields)).not.toContain("sk-secret");
  });
});

describe("an unreachable channel", () => {
  let gw: StartedGateway;
  beforeAll(async () => {
    // a port that was just free: nothing listens on it
    const probe = createServer().listen(0, "127.0.0.1");
    await new Promise((resolve) => probe.once("listening", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const config = coreConfig(`http://127.0.0.1:${port}`) as { channels: Array<Record<string, unknown>>; routing?: unknown };
    for (const c of config.channels) c.healthCheck = { intervalMs: 0 };
    gw = await startGateway(config);
  });
  afterAll(() => gw?.close());

  it("answers 502 in the gateway's words, nothing of the transport's error", async () => {
    const res = await chat(gw.url, { model: "m1", messages: [userMessage("hi")] });
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(JSON.parse(text).error).toMatchObject({ code: "upstream_error", message: "The model server for m1 could not be reached." });
    expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);
  });
});
