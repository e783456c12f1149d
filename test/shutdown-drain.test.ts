// Shutdown keeps its promise (docs/operations.md#shutdown): requests in flight finish within the grace
// period; at the deadline the rest are cut with an error event and finishReason "shutdown", and billed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RequestRecord } from "../src/observability/observer.js";
import { silentObserver } from "../src/observability/observer.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";
import { chat, coreConfig, userMessage } from "./support/core-config.js";
import { parseSse, readUntil } from "./support/sse.js";

let upstream: Upstream;
let gw: StartedGateway;
const records: RequestRecord[] = [];

beforeAll(async () => {
  upstream = await startUpstream({ chunks: 20, chunkDelayMs: 50 });
  gw = await startGateway(coreConfig(upstream.url), { observerExtra: { ...silentObserver, requestFinished: (r) => records.push(r) } });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe("gateway.drain", () => {
  it("lets a short stream finish, cuts a long one at the deadline with a shutdown error event, bills both, then refuses new requests", async () => {
    const short = chat(gw.url, { messages: [userMessage("short")], stream: true });
    await upstream.waitForRequests(1);
    upstream.behave({ chunks: 200, chunkDelayMs: 100 });
    const long = await chat(gw.url, { messages: [userMessage("long")], stream: true });
    const { text: begun, reader } = await readUntil(long, (t) => t.includes("data: {"));

    await gw.gateway.drain(1_500);

    const shortFrames = parseSse(await (await short).text());
    expect(shortFrames.at(-1)!.data).toBe("[DONE]");
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    const longFrames = parseSse(begun + rest);
    const last = JSON.parse(longFrames.at(-1)!.data);
    expect(last.error.code).toBe("shutting_down");

    const cut = records.find((r) => r.finishReason === "shutdown");
    expect(cut).toBeDefined();
    expect(cut!.outputTokens).toBeGreaterThan(0);
    expect(cut!.inputTokens).toBeGreaterThan(0);

    const late = await chat(gw.url, { messages: [userMessage("late")] });
    expect(late.status).toBe(503);
    expect((await late.json()).error.code).toBe("shutting_down");
  });
});
