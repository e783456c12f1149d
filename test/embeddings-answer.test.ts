// An upstream's embeddings answer passed on as bytes (src/embeddings/answer.ts): the top-level scan
// agrees with JSON.parse on what it reads, the vectors go out byte for byte, `usage` (and a missing
// or null `model`) is replaced in place — never a second key — and a wrong shape is the upstream's
// fault: 502 over a real socket, while the request is still billed for nothing.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { scanEmbeddings, withUsage } from "../src/embeddings/answer.js";
import { countText } from "../src/tokens/counter.js";
import { expectError } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";

const answerOf = (text: string, inputs: number) => scanEmbeddings(Buffer.from(text), inputs);
const patched = (text: string, inputs: number, tokens = 7, model = "m") => Buffer.concat(withUsage(answerOf(text, inputs)!, tokens, model)).toString();

describe("scanEmbeddings and withUsage", () => {
  it("reads the upstream's usage and leaves every other byte as it was", () => {
    const text = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-2e-5,3]},{"object":"embedding","index":1,"embedding":"AAAAPw=="}],"model":"up","usage":{"prompt_tokens":42,"total_tokens":42}}`;
    const answer = answerOf(text, 2)!;
    expect(answer.promptTokens).toBe(42);
    const out = patched(text, 2, 9);
    expect(out).toBe(text.replace(`{"prompt_tokens":42,"total_tokens":42}`, `{"prompt_tokens":9,"total_tokens":9}`));
  });

  it("agrees with JSON.parse across spacing, escapes and nesting, and never writes a key twice", () => {
    const cases: Array<[string, number]> = [
      // pretty-printed, usage first, a string holding quotes, brackets and a backslash
      [`{\n  "usage" : { "prompt_tokens" : 3 } ,\n  "note": "a \\"}]\\\\",\n  "data" : [ { "embedding" : [ 1 , 2 ] } ]\n}\n`, 1],
      // usage and model null: replaced where they are
      [`{"data":[{"embedding":[1]},{"embedding":[2]}],"usage":null,"model":null}`, 2],
      // no usage, no model: both added
      [`{"data":[{"embedding":[1],"usage":{"prompt_tokens":99}}]}`, 1],
      // a nested usage-like key and unusual values elsewhere
      [`{"object":"list","extra":{"usage":[1,{"a":"]"}]},"flag":true,"n":-1.5e3,"data":[{"embedding":[[0]]}],"model":"up"}`, 1],
      // an empty list for no inputs is still an object with data
      [`{"data":[],"model":"x"}`, 0],
    ];
    for (const [text, inputs] of cases) {
      const out = patched(text, inputs, 11, "fallback");
      const parsed = JSON.parse(out) as Record<string, unknown>;
      const original = JSON.parse(text) as Record<string, unknown>;
      expect(parsed.usage, text).toEqual({ prompt_tokens: 11, total_tokens: 11 });
      expect(parsed.model, text).toBe(original.model ?? "fallback");
      expect(parsed.data, text).toEqual(original.data);
      // a key is added only where the answer had none: JSON.parse would hide a duplicate, a count does not
      for (const key of ["usage", "model"]) {
        const before = text.split(`"${key}"`).length - 1;
        expect(out.split(`"${key}"`).length - 1, `${key} in ${text}`).toBe(before + (key in original ? 0 : 1));
      }
    }
  });

  it("gives the upstream's prompt tokens only when they are a usable count", () => {
    expect(answerOf(`{"data":[{}],"usage":{"prompt_tokens":5}}`, 1)!.promptTokens).toBe(5);
    expect(answerOf(`{"data":[{}],"usage":{"prompt_tokens":-1}}`, 1)!.promptTokens).toBeUndefined();
    expect(answerOf(`{"data":[{}],"usage":{"prompt_tokens":"5"}}`, 1)!.promptTokens).toBeUndefined();
    expect(answerOf(`{"data":[{}],"usage":{}}`, 1)!.promptTokens).toBeUndefined();
    expect(answerOf(`{"data":[{}]}`, 1)!.promptTokens).toBeUndefined();
  });

  it("refuses what is not an object whose data holds one object per input", () => {
    const bad = [
      `[{"data":[]}]`,
      `{}`,
      `{"data":{}}`,
      `{"data":[1]}`,
      `{"data":[{"embedding":[1]}]`, // cut
      `{"data":[{"embedding":[1]}]} x`,
      `{"data":[{"embedding":"abc}]}`, // a string that never ends
      `{"data":[{}],"data":[{}]}`,
      `{"data":[{}],"usage":{},"usage":{}}`,
      `{"data":[{}] "model":"m"}`,
      ``,
    ];
    for (const text of bad) expect(answerOf(text, 1), text).toBeUndefined();
    expect(answerOf(`{"data":[{},{}]}`, 1)).toBeUndefined();
    expect(answerOf(`{"data":[{}]}`, 2)).toBeUndefined();
  });

  it("scans a 16-input answer of 1,536 floats each as JSON.parse reads it", () => {
    const data = Array.from({ length: 16 }, (_, index) => ({ object: "embedding", index, embedding: Array.from({ length: 1536 }, (_, d) => Math.sin(index + d) / 7) }));
    const text = JSON.stringify({ object: "list", data, model: "big", usage: { prompt_tokens: 3200, total_tokens: 3200 } });
    const out = JSON.parse(patched(text, 16, 3200, "big")) as { data: unknown };
    expect(out.data).toEqual(data);
  });
});

describe("over real sockets", () => {
  let body = "";
  let upstream: Server;
  let upstreamUrl = "";
  let gw: StartedGateway | undefined;
  const KEY = "sk-emb-answer-key-0001";

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(body));
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  async function start(): Promise<StartedGateway> {
    gw = await startGateway({
      channels: [{ name: "up", baseUrl: upstreamUrl, models: ["m", "emb"], healthCheck: { intervalMs: 0 } }],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
      vectorModels: [{ model: "emb", inputPrice: 1 }],
      apps: [{ id: "a", model: "m", maxUsagePoints: 1000 }],
      apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
      routing: { maxAttempts: 1 },
    });
    return gw;
  }

  const embed = (input: unknown) =>
    fetch(`${gw!.url}/v1/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: "emb", input }),
    });

  it("sends the upstream's vectors byte for byte, with usage counted where it gave none and its model kept", async () => {
    await start();
    const vectors = `[{"object":"embedding","index":0,"embedding":[0.123456789,-1e-7]},{"object":"embedding","index":1,"embedding":[1.0,2.50]}]`;
    body = `{"object":"list","data":${vectors},"model":"upstream-name","usage":null}`;
    const res = await embed(["hello there", "general kenobi"]);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(res.headers.get("x-request-id")).toBeTruthy();
    const text = await res.text();
    const tokens = countText("hello there") + countText("general kenobi");
    expect(text).toBe(`{"object":"list","data":${vectors},"model":"upstream-name","usage":{"prompt_tokens":${tokens},"total_tokens":${tokens}}}`);
    const usage = await gw!.store.summarizeUsage({ appId: "a" });
    expect(usage.totals).toMatchObject({ requests: 1, inputTokens: tokens });
  });

  it("answers 502 upstream_error when the upstream's data does not hold one vector per input", async () => {
    await start();
    body = `{"object":"list","data":[{"embedding":[1]}],"usage":{"prompt_tokens":2}}`;
    await expectError(await embed(["one", "two"]), 502, "upstream_error");
    body = `{"object":"list","data":[{"embedding":[1]}`;
    await expectError(await embed("one"), 502, "upstream_error");
    // nothing was answered: the budget's hold is given back and no points are spent
    expect(await gw!.store.getSpent("app:a")).toBe(0);
  });
});
