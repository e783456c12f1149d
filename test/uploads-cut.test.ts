// A body still arriving (docs/operations.md#signals; issue 20 items 3 and 14): a client that hangs
// up mid-upload is a client abort (499), not the gateway's 503; a drain does not wait its whole
// grace for a client still sending its body — it gets 503 shutting_down after min(bodyTimeoutMs, 5 s).
import { afterEach, describe, expect, it } from "vitest";
import type { RequestRecord } from "../src/observability/observer.js";
import { silentObserver } from "../src/observability/observer.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { APP_KEY, coreConfig } from "./support/core-config.js";
import { halfBody, inflight } from "./support/half-body.js";

let gw: StartedGateway | undefined;
afterEach(async () => {
  await gw?.close().catch(() => {});
  gw = undefined;
});

/** Sends a chat request's headers and the first half of its body, then waits. */
const halfUpload = (url: string) =>
  halfBody(url, { path: "/v1/chat/completions", headers: `authorization: Bearer ${APP_KEY}\r\n`, body: { messages: [{ role: "user", content: "x".repeat(2000) }] } });

function recorder() {
  const records: RequestRecord[] = [];
  let wake: (() => void) | undefined;
  const observer = { ...silentObserver, requestFinished: (r: RequestRecord) => (records.push(r), wake?.()) };
  const next = () => new Promise<RequestRecord>((resolve) => (records.length > 0 ? resolve(records.shift()!) : (wake = () => resolve(records.shift()!))));
  return { observer, next };
}

describe("a body still arriving", () => {
  it("the client hanging up mid-upload is recorded as 499 client_closed (before: 503 shutting_down, feeding the 5xx alert)", async () => {
    const { observer, next } = recorder();
    gw = await startGateway(coreConfig("http://127.0.0.1:9"), { observerExtra: observer });
    const socket = await halfUpload(gw.url);
    // the body is being read (the request is in flight), then the client leaves
    await expect.poll(() => inflight(gw!.url)).toBe(1);
    socket.destroy();
    const record = await next();
    expect(record.status).toBe(499);
    expect(record.errorCode).toBe("client_closed");
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toContain('status="499"');
    expect(metrics).not.toMatch(/sluice_requests_total\{route="\/v1\/chat\/completions"[^}]*status="503"/);
  });

  it("a drain answers 503 shutting_down to a body still arriving after min(bodyTimeoutMs, 5 s), not after its whole grace", async () => {
    gw = await startGateway(coreConfig("http://127.0.0.1:9", { server: { bodyTimeoutMs: 1500 } }));
    const socket = await halfUpload(gw.url);
    await expect.poll(() => inflight(gw!.url)).toBe(1);
    let answer = "";
    socket.on("data", (d: Buffer) => (answer += d.toString()));
    const started = performance.now();
    // a grace of 25 s: the upload must not hold it
    await gw.gateway.drain(25_000);
    const took = performance.now() - started;
    await expect.poll(() => answer).toContain("shutting_down");
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    expect(took).toBeGreaterThanOrEqual(1400);
    expect(took).toBeLessThan(10_000);
    socket.destroy();
  });
});
