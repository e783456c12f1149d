// vLLM's `reasoning` (renamed from `reasoning_content`) as FastGPT reads it (docs/fastgpt.md#reasoning):
// on FastGPT-facing answers — /api/v1, share links, an admin key's calls — it also arrives as
// `reasoning_content`, whole and streamed; an app key's /v1 answer is the model server's as it is.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APP_KEY, coreConfig, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startJsonServer, type JsonServer } from "./support/json-server.js";
import { parseSse } from "./support/sse.js";

const FASTGPT_KEY = "sk-fastgpt-reasoning-key-1";
const base = { id: "c1", created: 1, model: "m1" };

let model: JsonServer;
let g: StartedGateway;
beforeAll(async () => {
  // a vLLM of today: the thinking in `reasoning`, one chunk of it holding a quoted "reasoning": as text
  model = await startJsonServer("/chat/completions", (body, res) => {
    const usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "Hi.", reasoning: "Think." }, finish_reason: "stop" }], usage }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: "assistant", reasoning: 'Say "reasoning": no.' }));
    res.write(chunk({ content: "Hi." }));
    res.write(chunk({}, "stop"));
    res.end(`data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [], usage })}\n\ndata: [DONE]\n\n`);
  });
  const config = coreConfig(model.url) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  config.apiKeys.push({ name: "fastgpt", kind: "admin", appId: "a1", key: FASTGPT_KEY });
  for (const c of config.channels) c.healthCheck = { intervalMs: 0 };
  g = await startGateway(config);
});
afterAll(async () => {
  await g?.close();
  await model?.close();
});

function ask(path: string, key: string, stream: boolean): Promise<Response> {
  return fetch(g.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "m1", stream, messages: [userMessage("hi")] }),
  });
}
async function streamedDeltas(res: Response): Promise<Array<Record<string, unknown>>> {
  const events = parseSse(await res.text());
  return events
    .filter((e) => e.data !== "[DONE]")
    .map((e) => JSON.parse(e.data) as { choices: Array<{ delta: Record<string, unknown> }> })
    .flatMap((c) => c.choices.map((choice) => choice.delta));
}

describe("reasoning as FastGPT reads it", () => {
  it("adds reasoning_content to a whole answer on /api/v1 and for an admin key on /v1", async () => {
    for (const [path, key] of [["/api/v1/chat/completions", APP_KEY], ["/v1/chat/completions", FASTGPT_KEY]] as const) {
      const answer = (await (await ask(path, key, false)).json()) as { choices: Array<{ message: Record<string, unknown> }> };
      expect(answer.choices[0]!.message).toMatchObject({ content: "Hi.", reasoning: "Think.", reasoning_content: "Think." });
    }
  });

  it("adds it to every streamed chunk that has reasoning, a quoted key in the text left as text", async () => {
    const deltas = await streamedDeltas(await ask("/api/v1/chat/completions", APP_KEY, true));
    expect(deltas[0]).toEqual({ role: "assistant", reasoning: 'Say "reasoning": no.', reasoning_content: 'Say "reasoning": no.' });
    expect(deltas[1]).toEqual({ content: "Hi." });
  });

  it("goes by the route, not the URL's spelling: FastGPT's route spelled `/api/%761/…` is FastGPT's too", async () => {
    // (the router routes the path decoded; the flag is the route's, whatever the spelling)
    const answer = (await (await ask("/api/%761/chat/completions", APP_KEY, false)).json()) as { choices: Array<{ message: Record<string, unknown> }> };
    expect(answer.choices[0]!.message).toMatchObject({ reasoning: "Think.", reasoning_content: "Think." });
    // and OpenAI's route spelled otherwise stays OpenAI's
    const plain = (await (await ask("/v1/chat/%63ompletions", APP_KEY, false)).json()) as { choices: Array<{ message: Record<string, unknown> }> };
    expect(plain.choices[0]!.message.reasoning_content).toBeUndefined();
  });

  it("leaves an app key's /v1 answer as the model server gave it", async () => {
    const answer = (await (await ask("/v1/chat/completions", APP_KEY, false)).json()) as { choices: Array<{ message: Record<string, unknown> }> };
    expect(answer.choices[0]!.message.reasoning_content).toBeUndefined();
    expect((await streamedDeltas(await ask("/v1/chat/completions", APP_KEY, true)))[0]).toEqual({ role: "assistant", reasoning: 'Say "reasoning": no.' });
  });
});
