// Stored responses across instances (docs/codex.md#store-and-previous_response_id): two gateways on
// one PostgreSQL database (test/support/postgres.ts, a real server), the openai SDK on each. A
// response stored through one is continued with previous_response_id, retrieved and deleted
// through the other — for the app that made it only.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStore } from "../src/store/index.js";
import type { Store } from "../src/store/types.js";
import { usePostgres } from "./support/postgres.js";
import { APP_KEY, MODEL, OTHER_KEY, startResponsesGateway, type ResponsesGateway } from "./support/responses-gateway.js";
import { textChunks, type ScriptedRequest } from "./support/scripted-upstream.js";

const postgres = usePostgres();
/** Each instance's model repeats what it was asked, turn by turn, and says which instance it is. */
const repeat = (instance: string) => (req: ScriptedRequest) => {
  const asked = (req.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === "user").map((m) => m.content);
  return { chunks: textChunks(`${instance} heard ${JSON.stringify(asked)}`), finishReason: "stop", usage: { prompt_tokens: 8, completion_tokens: 4 } };
};

const stores: Store[] = [];
const gateways: ResponsesGateway[] = [];
beforeAll(async () => {
  const url = await postgres.createDatabase();
  for (const instance of ["one", "two"]) {
    const store = createStore({ driver: "postgres", url });
    stores.push(store);
    const h = await startResponsesGateway({ store });
    h.play(repeat(instance));
    gateways.push(h);
  }
});
afterAll(async () => {
  await Promise.all(gateways.map((h) => h.close()));
  await Promise.all(stores.map((s) => s.close()));
});

const client = (n: number, key = APP_KEY) => new OpenAI({ apiKey: key, baseURL: gateways[n]!.baseURL, maxRetries: 0 });

describe("stored responses on PostgreSQL, across two gateways", () => {
  it("continues through one gateway a response stored through the other, whole and streamed", async () => {
    const first = await client(0).responses.create({ model: MODEL, input: "my name is Ada" });
    expect(first.output_text).toBe('one heard ["my name is Ada"]');
    const second = await client(1).responses.create({ model: MODEL, input: "what is my name?", previous_response_id: first.id });
    expect(second.output_text).toBe('two heard ["my name is Ada","what is my name?"]');
    const last = gateways[1]!.upstream.requests.at(-1)!.body.messages;
    expect(last).toEqual([
      { role: "user", content: "my name is Ada" },
      { role: "assistant", content: 'one heard ["my name is Ada"]' },
      { role: "user", content: "what is my name?" },
    ]);
    // and back, streamed, the chain of both in one read
    const third = await client(0).responses.stream({ model: MODEL, input: "and again?", previous_response_id: second.id }).finalResponse();
    expect(third.output_text).toBe('one heard ["my name is Ada","what is my name?","and again?"]');
  });

  it("retrieves and deletes through the other gateway, for the same app only", async () => {
    const stored = await client(0).responses.create({ model: MODEL, input: "keep me" });
    expect(await client(1).responses.retrieve(stored.id)).toMatchObject({ id: stored.id, output_text: stored.output_text, usage: stored.usage });
    await expect(client(1, OTHER_KEY).responses.retrieve(stored.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client(1, OTHER_KEY).responses.delete(stored.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await client(1).responses.delete(stored.id)).toEqual({ id: stored.id, object: "response.deleted", deleted: true });
    await expect(client(0).responses.retrieve(stored.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client(0).responses.create({ model: MODEL, input: "x", previous_response_id: stored.id })).rejects.toMatchObject({ status: 400, code: "previous_response_not_found" });
  });

  it("keeps nothing of store: false on either", async () => {
    const r = await client(0).responses.create({ model: MODEL, input: "forget me", store: false });
    await expect(client(1).responses.retrieve(r.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await stores[1]!.getResponse("coder", r.id, Date.now())).toBeUndefined();
  });
});

describe("stored responses on PostgreSQL are their key's, and go with what continues them (issue 27)", () => {
  const SECOND_KEY = "sk-responses-coder-0002";
  let h: ResponsesGateway;
  let store: Store;
  beforeAll(async () => {
    store = createStore({ driver: "postgres", url: await postgres.createDatabase() });
    h = await startResponsesGateway({
      store,
      extra: {
        apps: [{ id: "coder", model: MODEL }],
        apiKeys: [
          { name: "coder-key", kind: "app", appId: "coder", key: APP_KEY },
          { name: "coder-key-2", kind: "app", appId: "coder", key: SECOND_KEY },
        ],
      },
    });
    h.play(repeat("pg"));
  });
  afterAll(async () => {
    await h.close();
    await store.close();
  });

  it("a second key of the app neither reads, continues nor deletes the first key's (before: it did all three)", async () => {
    const own = new OpenAI({ apiKey: APP_KEY, baseURL: h.baseURL, maxRetries: 0 });
    const second = new OpenAI({ apiKey: SECOND_KEY, baseURL: h.baseURL, maxRetries: 0 });
    const first = await own.responses.create({ model: MODEL, input: "my secret is 42" });
    await expect(second.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(second.responses.create({ model: MODEL, input: "secret?", previous_response_id: first.id })).rejects.toMatchObject({ status: 400, code: "previous_response_not_found" });
    await expect(second.responses.delete(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const child = await own.responses.create({ model: MODEL, input: "remember it", previous_response_id: first.id });
    expect(await own.responses.delete(first.id)).toMatchObject({ deleted: true });
    await expect(own.responses.retrieve(child.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await store.responseUsage("coder", Date.now())).toEqual({ rows: 0, bytes: 0 });
  });
});
