// The routes the gateway answers itself — count_tokens and the share API — run the pipeline's
// unmetered mode (docs/architecture.md#pipeline): their body is read under the request's Cancel, so a
// client hanging up mid-body is 499 client_closed (before: 500 internal_error) and a drain cuts a
// body still arriving with 503 shutting_down instead of waiting its whole grace.
import { afterEach, describe, expect, it } from "vitest";
import type { RequestRecord } from "../src/observability/observer.js";
import { silentObserver } from "../src/observability/observer.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { APP_KEY, coreConfig } from "./support/core-config.js";
import { halfBody, inflight, type HalfRequest } from "./support/half-body.js";

let gw: StartedGateway | undefined;
afterEach(async () => {
  await gw?.close().catch(() => {});
  gw = undefined;
});

interface Route extends HalfRequest {
  label: string;
}
const ROUTES: Route[] = [
  { path: "/v1/messages/count_tokens", label: "count_tokens", headers: `x-api-key: ${APP_KEY}\r\n`, body: { model: "m1", messages: [{ role: "user", content: "x".repeat(2000) }] } },
  { path: "/api/share/init", label: "/api/share/init", headers: "", body: { shareId: "open", outLinkUid: "u".repeat(2000) } },
  { path: "/api/share/chats", label: "/api/share/chats", headers: "", body: { shareId: "open", outLinkUid: "u".repeat(2000) } },
  { path: "/api/share/chat", label: "/api/share/chat", headers: "", body: { shareId: "open", outLinkUid: "u".repeat(2000), chatId: "c1" } },
];

const config = (extra: Record<string, unknown> = {}) => coreConfig("http://127.0.0.1:9", { shareLinks: [{ shareId: "open", appId: "a1" }], ...extra });

function recorder() {
  const records: RequestRecord[] = [];
  const observer = { ...silentObserver, requestFinished: (r: RequestRecord) => void records.push(r) };
  return { observer, records };
}

describe.each(ROUTES)("$path", (route) => {
  it("a client hanging up mid-body is recorded as 499 client_closed", async () => {
    const { observer, records } = recorder();
    gw = await startGateway(config(), { observerExtra: observer });
    const socket = await halfBody(gw.url, route);
    await expect.poll(() => inflight(gw!.url)).toBe(1);
    socket.destroy();
    await expect.poll(() => records.find((r) => r.route === route.label)).toBeDefined();
    const record = records.find((r) => r.route === route.label)!;
    expect(record.status).toBe(499);
    expect(record.errorCode).toBe("client_closed");
  });

  it("a drain cuts a body still arriving after min(bodyTimeoutMs, 5 s): 503 (shutting_down)", async () => {
    gw = await startGateway(config({ server: { bodyTimeoutMs: 1000 } }));
    const socket = await halfBody(gw.url, route);
    await expect.poll(() => inflight(gw!.url)).toBe(1);
    let answer = "";
    socket.on("data", (d: Buffer) => (answer += d.toString()));
    // a grace of 25 s: the body must not hold it
    await gw.gateway.drain(25_000);
    await expect.poll(() => answer).toMatch(/^HTTP\/1\.1 503/);
    // in the route's error shape: OpenAI's code, or Anthropic's type
    await expect.poll(() => answer).toMatch(route.label === "count_tokens" ? /"type":"error"/ : /shutting_down/);
    socket.destroy();
  });
});
