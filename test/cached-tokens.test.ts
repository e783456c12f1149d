// Cached tokens (docs/routing.md#cached-tokens): the upstream's prompt_tokens_details.cached_tokens
// reaches every dialect — chat's prompt_tokens_details, Messages' cache_read_input_tokens with
// input_tokens the uncached rest (in a stream on message_delta), Responses'
// input_tokens_details.cached_tokens — is priced by cachedInputPrice and counted in /metrics.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-cached-tokens-app-0001";
let upstream: Upstream;
let gw: StartedGateway;
beforeAll(async () => {
  upstream = await startUpstream({ usage: { prompt_tokens: 1000, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 800 } } });
  gw = await startGateway({
    channels: [{ name: "gpu", baseUrl: upstream.url, models: ["coder", "plain"], healthCheck: { intervalMs: 0 } }],
    llmModels: [
      { model: "coder", maxContext: 8000, maxResponse: 100, inputPrice: 1, cachedInputPrice: 0.1, outputPrice: 2 },
      { model: "plain", maxContext: 8000, maxResponse: 100, inputPrice: 1, outputPrice: 2 },
    ],
    apps: [{ id: "a", model: "coder", models: ["coder", "plain"] }],
    apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const post = (path: string, body: unknown) =>
  fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, "anthropic-version": "2023-06-01" }, body: JSON.stringify(body) });
const user = [{ role: "user", content: "hi" }];

describe("cached tokens in every dialect", () => {
  it("chat: prompt_tokens_details.cached_tokens", async () => {
    const body = (await (await post("/v1/chat/completions", { model: "coder", messages: user })).json()) as { usage: unknown };
    expect(body.usage).toEqual({ prompt_tokens: 1000, completion_tokens: 10, total_tokens: 1010, prompt_tokens_details: { cached_tokens: 800 } });
  });

  it("Messages: cache_read_input_tokens, input_tokens the uncached rest, whole and on message_delta", async () => {
    const whole = (await (await post("/v1/messages", { model: "coder", max_tokens: 50, messages: user })).json()) as { usage: unknown };
    expect(whole.usage).toEqual({ input_tokens: 200, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 800 });
    const stream = await (await post("/v1/messages", { model: "coder", max_tokens: 50, stream: true, messages: user })).text();
    const delta = stream.split("\n").find((line) => line.startsWith("data: ") && line.includes('"message_delta"'));
    expect(JSON.parse(delta!.slice(6)).usage).toEqual({ input_tokens: 200, output_tokens: 10, cache_read_input_tokens: 800 });
  });

  it("Responses: input_tokens_details.cached_tokens", async () => {
    const body = (await (await post("/v1/responses", { model: "coder", store: false, input: "hi" })).json()) as { usage: unknown };
    expect(body.usage).toMatchObject({ input_tokens: 1000, input_tokens_details: { cached_tokens: 800 }, output_tokens: 10 });
  });

  it("prices them by cachedInputPrice (default: the input price) and counts them per model and channel", async () => {
    const points = async (model: string) => {
      const before = await spent(model);
      await (await post("/v1/chat/completions", { model, messages: user })).text();
      return (await spent(model)) - before;
    };
    // (200 × 1 + 800 × 0.1 + 10 × 2) / 1000, and (1000 × 1 + 10 × 2) / 1000
    expect(await points("coder")).toBeCloseTo(0.3, 9);
    expect(await points("plain")).toBeCloseTo(1.02, 9);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(Number(/sluice_upstream_cached_tokens_total\{model="coder",channel="gpu"\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(800 * 5);
  });
});

async function spent(model: string): Promise<number> {
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  return Number(new RegExp(`sluice_points_total\\{model="${model}",app="a"\\} (\\S+)`).exec(metrics)?.[1] ?? 0);
}
