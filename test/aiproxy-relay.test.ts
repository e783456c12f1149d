// FastGPT's model calls on Sluice (docs/fastgpt.md#model-calls): FastGPT calls `{AIPROXY_API_ENDPOINT}/v1/…`
// with its AI Proxy token, an admin key, which serves the app it names; `Aiproxy-Channel` pins its
// "test model" probe to one channel (packages/service/core/ai/modelStatus/test.ts); the member-model
// headers are accepted, and none of them reaches a model server.
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { unmapAnswerModel } from "../src/upstream/model-mapping.js";
import { APP_KEY, CHANNEL_KEY, chat, coreConfig, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const FASTGPT_KEY = "sk-fastgpt-aiproxy-token-01";
const BARE_ADMIN_KEY = "sk-bare-admin-key-000001";
const SECOND_KEY = "second-channel-key-relay-02";

let upstream: Upstream;
let second: Upstream;
let g: StartedGateway;
beforeAll(async () => {
  upstream = await startUpstream();
  second = await startUpstream();
  const config = coreConfig(upstream.url) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  config.channels.push({ name: "second", id: 9, baseUrl: second.url, key: SECOND_KEY, models: ["m1"], modelMapping: { m1: "vendor/m1-awq" } });
  for (const c of config.channels) c.healthCheck = { intervalMs: 0 };
  config.apiKeys.push({ name: "fastgpt", kind: "admin", appId: "a1", key: FASTGPT_KEY }, { name: "bare-admin", kind: "admin", key: BARE_ADMIN_KEY });
  g = await startGateway(config);
});
afterAll(async () => {
  await g?.close();
  await upstream?.close();
  await second?.close();
});
afterEach(() => {
  upstream.reset();
  second.reset();
});

/** FastGPT's model call: the OpenAI SDK's POST with its token, plus the headers FastGPT adds. */
function fastgptCall(body: Record<string, unknown>, headers: Record<string, string> = {}, key = FASTGPT_KEY): Promise<Response> {
  return fetch(`${g.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
}
async function errorOf(res: Response): Promise<{ status: number; code: string }> {
  return { status: res.status, code: ((await res.json()) as { error: { code: string } }).error.code };
}
const recorded = () => [...upstream.requests, ...second.requests];

describe("an admin key with appId", () => {
  it("serves its app's model calls, billed to the app under the key's name, with FastGPT's member headers accepted and never forwarded", async () => {
    const res = await fastgptCall({ model: "m1", messages: [userMessage("hi")] }, { "x-aiproxy-group": "fastgpt:tmb:65f0", "x-aiproxy-group-channel-mode": "own" });
    expect(res.status).toBe(200);
    await res.text();
    const [sent] = recorded();
    expect(Object.keys(sent!.headers).filter((h) => h.startsWith("aiproxy") || h.startsWith("x-aiproxy"))).toEqual([]);
    expect([`Bearer ${CHANNEL_KEY}`, `Bearer ${SECOND_KEY}`]).toContain(sent!.headers.authorization);
    await vi.waitFor(async () => expect((await g.store.summarizeUsage({ appId: "a1" })).totals.requests).toBeGreaterThanOrEqual(1));
  });

  it("keeps 403 app_key_required for an admin key without appId", async () => {
    expect(await errorOf(await fastgptCall({ model: "m1", messages: [userMessage("hi")] }, {}, BARE_ADMIN_KEY))).toEqual({ status: 403, code: "app_key_required" });
  });
});

describe("channels[].modelMapping", () => {
  it("sends the model's name on that server, and answers, whole and streamed, with the configured name", async () => {
    const whole = await fastgptCall({ model: "m1", messages: [userMessage("mapped")] }, { "Aiproxy-Channel": "9" });
    expect(((await whole.json()) as { model: string }).model).toBe("m1");
    const streamed = await fastgptCall({ model: "m1", stream: true, messages: [userMessage("mapped")] }, { "Aiproxy-Channel": "9" });
    const text = await streamed.text();
    expect(text).toContain('"model":"m1"');
    expect(text).not.toContain("vendor/m1-awq");
    expect(second.requests.map((r) => r.body.model)).toEqual(["vendor/m1-awq", "vendor/m1-awq"]);
    // the other channel of the model has no mapping ("up": numbered past the 9 config.json gives)
    await (await fastgptCall({ model: "m1", messages: [userMessage("plain")] }, { "Aiproxy-Channel": "10" })).text();
    expect(upstream.requests.at(-1)!.body.model).toBe("m1");
  });
});

describe("an answer's model name mapped back", () => {
  it("is found across chunk boundaries, one byte a chunk, a non-ASCII name too", async () => {
    const answer = '{"model":"vendor/模型-awq","x":1}data: {"model": "vendor/模型-awq"}';
    const bytes = Buffer.from(answer);
    const body = Readable.from(Array.from(bytes, (b) => Buffer.from([b])));
    expect(await text(unmapAnswerModel(body, "vendor/模型-awq", "m1"))).toBe('{"model":"m1","x":1}data: {"model":"m1"}');
  });
});

describe("Aiproxy-Channel", () => {
  it("sends the call to that channel alone, also when it is disabled", async () => {
    const disabled = await fetch(`${g.url}/api/channel/9/status`, { method: "POST", headers: { authorization: `Bearer ${FASTGPT_KEY}`, "content-type": "application/json" }, body: '{"status":2}' });
    expect(disabled.status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const res = await fastgptCall({ model: "m1", messages: [userMessage(`probe ${i}`)] }, { "Aiproxy-Channel": "9" });
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(second.requests).toHaveLength(3);
    expect(second.requests.every((r) => r.headers.authorization === `Bearer ${SECOND_KEY}` && !("aiproxy-channel" in r.headers))).toBe(true);
    // unpinned, the disabled channel is never picked
    for (let i = 0; i < 3; i++) expect((await chat(g.url, { model: "m1", messages: [userMessage(`free ${i}`)] })).status).toBe(200);
    expect(second.requests).toHaveLength(3);
    expect(upstream.requests).toHaveLength(3);
  });

  it("is refused for any key but an admin key, and for a channel that does not serve the model", async () => {
    expect(await errorOf(await fastgptCall({ model: "m1", messages: [userMessage("hi")] }, { "Aiproxy-Channel": "9" }, APP_KEY))).toEqual({ status: 403, code: "channel_pin_forbidden" });
    expect(await errorOf(await fastgptCall({ model: "m-vision", messages: [userMessage("hi")] }, { "Aiproxy-Channel": "9" }))).toEqual({ status: 404, code: "channel_not_found" });
    expect(await errorOf(await fastgptCall({ model: "m1", messages: [userMessage("hi")] }, { "Aiproxy-Channel": "77" }))).toEqual({ status: 404, code: "channel_not_found" });
    expect(recorded()).toHaveLength(0);
  });
});
