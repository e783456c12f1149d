// Stored responses belong to the key that made them, go with what continues them, and stay within
// their app's quota (docs/codex.md#store-and-previous_response_id): a second key of the same app
// neither reads, continues nor deletes another key's response unless the app shares its chats
// (`sharedChats`); deleting a response deletes every response continued from it (their input holds
// its conversation); `responses.maxBytes`, `maxRowsPerApp` and `maxBytesPerApp` refuse with a 400
// naming `store` before the model is called. SQLite here; test/responses-postgres.test.ts checks
// the scoping on PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODEL, startResponsesGateway, type ResponsesGateway } from "./support/responses-gateway.js";
import { textChunks, type ScriptedRequest } from "./support/scripted-upstream.js";

const KEY_A = "sk-responses-owner-a-0001";
const KEY_B = "sk-responses-owner-b-0002";
const TEAM_A = "sk-responses-team-a-0003";
const TEAM_B = "sk-responses-team-b-0004";

const apps = (extra: Record<string, unknown> = {}) => ({
  apps: [
    { id: "coder", model: MODEL },
    { id: "team", model: MODEL, sharedChats: true },
  ],
  apiKeys: [
    { name: "owner-a", kind: "app", appId: "coder", key: KEY_A },
    { name: "owner-b", kind: "app", appId: "coder", key: KEY_B },
    { name: "team-a", kind: "app", appId: "team", key: TEAM_A },
    { name: "team-b", kind: "app", appId: "team", key: TEAM_B },
  ],
  ...extra,
});

/** The model repeats every user turn it was sent. */
const repeat = (req: ScriptedRequest) => {
  const asked = req.body.messages.filter((m) => m.role === "user").map((m) => m.content);
  return { chunks: textChunks(`heard ${JSON.stringify(asked)}`), finishReason: "stop", usage: { prompt_tokens: 8, completion_tokens: 4 } };
};

function client(h: ResponsesGateway, key: string) {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  return {
    create: (body: Record<string, unknown>) => fetch(`${h.baseURL}/responses`, { method: "POST", headers, body: JSON.stringify({ model: MODEL, ...body }) }),
    get: (id: string) => fetch(`${h.baseURL}/responses/${id}`, { headers }),
    delete: (id: string) => fetch(`${h.baseURL}/responses/${id}`, { method: "DELETE", headers }),
  };
}

async function created(res: Promise<Response>): Promise<string> {
  const r = await res;
  expect(r.status).toBe(200);
  return ((await r.json()) as { id: string }).id;
}

async function errorOf(res: Promise<Response>, status: number): Promise<{ code: string; param?: string; message: string }> {
  const r = await res;
  expect(r.status).toBe(status);
  return ((await r.json()) as { error: { code: string; param?: string; message: string } }).error;
}

describe("stored responses are their key's, and go with what continues them", () => {
  let h: ResponsesGateway;
  beforeAll(async () => {
    h = await startResponsesGateway({ extra: apps() });
    h.play(repeat);
  });
  afterAll(() => h.close());

  it("a second key of the same app neither reads, continues nor deletes the first key's response (before: 200, 200, 200)", async () => {
    const a = client(h, KEY_A);
    const b = client(h, KEY_B);
    const id = await created(a.create({ input: "my secret is 42" }));
    expect((await errorOf(b.get(id), 404)).code).toBe("response_not_found");
    expect(await errorOf(b.create({ input: "what is the secret?", previous_response_id: id }), 400)).toMatchObject({ code: "previous_response_not_found", param: "previous_response_id" });
    expect((await errorOf(b.delete(id), 404)).code).toBe("response_not_found");
    expect(h.upstream.requests.some((r) => JSON.stringify(r.body.messages).includes("what is the secret"))).toBe(false);
    // still the first key's, whole
    expect((await a.get(id)).status).toBe(200);
    expect((await a.create({ input: "and?", previous_response_id: id, store: false })).status).toBe(200);
    expect((await a.delete(id)).status).toBe(200);
  });

  it("an app that shares its chats shares its responses among its keys", async () => {
    const a = client(h, TEAM_A);
    const b = client(h, TEAM_B);
    const id = await created(a.create({ input: "team notes" }));
    expect((await b.get(id)).status).toBe(200);
    const next = await created(b.create({ input: "more", previous_response_id: id }));
    expect((await a.get(next)).status).toBe(200);
    expect((await b.delete(id)).status).toBe(200);
    // another app's key: never
    expect((await errorOf(client(h, KEY_A).get(next), 404)).code).toBe("response_not_found");
  });

  it("deleting a response deletes every response continued from it (before: a child kept it and sent it upstream again)", async () => {
    const a = client(h, KEY_A);
    const first = await created(a.create({ input: "my secret is 42" }));
    const second = await created(a.create({ input: "remember it", previous_response_id: first }));
    const third = await created(a.create({ input: "again", previous_response_id: second }));
    const apart = await created(a.create({ input: "unrelated" }));
    expect(await (await a.delete(first)).json()).toEqual({ id: first, object: "response.deleted", deleted: true });
    for (const id of [first, second, third]) expect((await errorOf(a.get(id), 404)).code).toBe("response_not_found");
    const sent = h.upstream.requests.length;
    expect((await errorOf(a.create({ input: "what was the secret?", previous_response_id: third }), 400)).code).toBe("previous_response_not_found");
    expect(h.upstream.requests).toHaveLength(sent);
    expect((await a.get(apart)).status).toBe(200);
  });
});

describe("stored responses stay within their app's quota", () => {
  let h: ResponsesGateway;
  beforeAll(async () => {
    h = await startResponsesGateway({ extra: apps({ responses: { maxBytes: 4096, maxRowsPerApp: 2, maxBytesPerApp: 6000 } }) });
    h.play(repeat);
  });
  afterAll(() => h.close());

  it("refuses a conversation over responses.maxBytes to store, before the model is called (before: answered, silently not kept)", async () => {
    const a = client(h, TEAM_A);
    const sent = h.upstream.requests.length;
    const error = await errorOf(a.create({ input: "x".repeat(5000) }), 400);
    expect(error).toMatchObject({ code: "stored_response_too_large", param: "store" });
    expect(error.message).toMatch(/takes 50\d\d bytes and a stored response at most 4096/);
    expect(h.upstream.requests).toHaveLength(sent);
    expect((await a.create({ input: "x".repeat(5000), store: false })).status).toBe(200);
  });

  it("refuses a store past maxRowsPerApp until one is deleted; store: false is still served (before: no limit)", async () => {
    const a = client(h, KEY_A);
    const b = client(h, KEY_B);
    const kept = [await created(a.create({ input: "one" })), await created(b.create({ input: "two" }))];
    const sent = h.upstream.requests.length;
    const error = await errorOf(a.create({ input: "three" }), 400);
    expect(error).toMatchObject({ code: "store_quota_exceeded", param: "store" });
    expect(error.message).toContain("app coder keeps 2 responses");
    expect(h.upstream.requests).toHaveLength(sent);
    expect((await a.create({ input: "three", store: false })).status).toBe(200);
    expect((await a.delete(kept[0]!)).status).toBe(200);
    await created(a.create({ input: "three" }));
  });

  it("refuses a store past maxBytesPerApp (before: no bound; the audit kept 18 MB in 20 calls)", async () => {
    const a = client(h, TEAM_A);
    h.play(() => ({ chunks: textChunks("ok"), finishReason: "stop" }));
    await created(a.create({ input: "y".repeat(2500) }));
    const kept = await h.gw.store.responseUsage("team", Date.now());
    expect(kept.rows).toBe(1);
    // what is kept and this conversation together: 6,001 bytes or more
    const error = await errorOf(a.create({ input: "z".repeat(6001 - kept.bytes) }), 400);
    expect(error).toMatchObject({ code: "store_quota_exceeded", param: "store" });
    expect(error.message).toContain(`app team keeps 1 responses (${kept.bytes} bytes), its quota is 2 (6000 bytes)`);
    h.play(repeat);
  });
});
