// Cheap refusals before costly work (docs/api.md#budgets; issue 20 item 6): a request over a QPM
// window, or on a spent budget, is refused before the operator's /shareAuth/start is asked, before
// its history is read and before its prompt is counted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startOperatorServer, type OperatorServer } from "./support/operator-server.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

let upstream: Upstream;
let op: OperatorServer;
let gw: StartedGateway;

beforeAll(async () => {
  upstream = await startUpstream({ usage: { prompt_tokens: 10, completion_tokens: 500 } });
  op = await startOperatorServer();
  gw = await startGateway({
    channels: [{ name: "up", baseUrl: upstream.url, models: ["m"] }],
    llmModels: [{ model: "m", maxContext: 4000, maxResponse: 1000, charsPointsPrice: 2 }],
    apps: [{ id: "a", model: "m" }],
    shareLinks: [
      { shareId: "busy", appId: "a", authHost: op.url, qpm: 5, apiQpm: 0 },
      { shareId: "poor", appId: "a", authHost: op.url, maxUsagePoints: 1, apiQpm: 0 },
    ],
  });
});
afterAll(async () => {
  await gw?.close();
  await op?.close();
  await upstream?.close();
});

const ask = (shareId: string, token: string) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ shareId, outLinkUid: token, messages: [{ role: "user", content: "hello" }] }),
  });

describe("cheap refusals", () => {
  it("a link with qpm 5: 20 requests make 5 start calls, not 20 (before: 20 calls, 15 of them refused anyway)", async () => {
    const statuses = [];
    for (let i = 0; i < 20; i++) statuses.push((await ask("busy", `tok-busy-${i}`)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    expect(op.callsTo("/shareAuth/start")).toHaveLength(5);
  });

  it("a spent budget is refused before the operator is asked", async () => {
    // 1 point: the first answer (10 + 500 tokens at 2 per 1,000) spends it
    expect((await ask("poor", "tok-poor-1")).status).toBe(200);
    const before = op.callsTo("/shareAuth/start").length;
    for (let i = 0; i < 5; i++) expect((await ask("poor", `tok-poor-${i + 2}`)).status).toBe(429);
    expect(op.callsTo("/shareAuth/start").length).toBe(before);
  });
});
