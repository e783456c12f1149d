// What a key may use of the whole fleet (docs/fleet.md#apps): GET /v1/models lists every kind with
// its kind and the aliases beside the models; /v1/models/{id} answers for a model or an alias (a
// glob's match too). The usage API's totals per kind (docs/fleet.md#usage), in each kind's units.
import { toFile } from "openai";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { expectError } from "./support/fixtures.js";
import { BARE_KEY, FLEET_GLOBAL_KEY, FLEET_KEY, LISTED_KEY, useFleet } from "./support/fleet.js";
import { makeWav } from "./support/tone.js";

interface ModelObject {
  id: string;
  object: string;
  name: string;
  sluice_kind: string;
  completions?: boolean;
  sluice_alias_of?: string;
}

const f = useFleet();
const get = (path: string, key: string) => fetch(`${f.gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
const list = async (key: string) => ((await (await get("/v1/models", key)).json()) as { object: string; data: ModelObject[] }).data;
const brief = (m: ModelObject) => [m.id, m.sluice_kind, m.sluice_alias_of ?? ""];

describe("GET /v1/models across the fleet", () => {
  it("gives an app the models it lists of every kind, with their kinds and aliases", async () => {
    const data = await list(FLEET_KEY);
    expect(data.map(brief)).toEqual([
      ["qwen-coder", "chat", ""],
      ["bge-reranker", "rerank", ""],
      ["remote-reranker", "rerank", ""],
      ["cosyvoice", "speech", ""],
      ["whisper-large-v3", "transcription", ""],
      ["sensevoice", "transcription", ""],
      ["tts-1", "speech", "cosyvoice"],
      ["whisper-1", "transcription", "whisper-large-v3"],
      ["rerank-*", "rerank", "bge-reranker"],
      ["gpt-3.5-turbo-instruct", "chat", "qwen-coder"],
    ]);
    expect(data[0]).toMatchObject({ object: "model", name: "Qwen Coder", completions: true });
    expect(data[3]).toMatchObject({ name: "CosyVoice" });
    expect(data[3]).not.toHaveProperty("completions");
  });

  it("gives an app without models its chat model and no rerank, speech or transcription model (before: every one, a paid requestUrl rerank too)", async () => {
    expect((await list(BARE_KEY)).map(brief)).toEqual([
      ["qwen-coder", "chat", ""],
      ["gpt-3.5-turbo-instruct", "chat", "qwen-coder"],
    ]);
    const post = (path: string, body: unknown) =>
      fetch(`${f.gw.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${BARE_KEY}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const sent = f.ownRerank.requests.length;
    for (const model of ["remote-reranker", "bge-reranker", "rerank-english-v3.0"]) {
      await expectError(await post("/v1/rerank", { model, query: "q", documents: ["a", "b"] }), 404, "model_not_found");
    }
    expect(f.ownRerank.requests).toHaveLength(sent);
    await expectError(await post("/v1/audio/speech", { model: "tts-1", input: "hello", voice: "alloy" }), 404, "model_not_found");
    await expectError(await get("/v1/models/whisper-1", BARE_KEY), 404, "model_not_found");
  });

  it("gives an app with models those only, and the aliases that stand for them", async () => {
    expect((await list(LISTED_KEY)).map(brief)).toEqual([
      ["chat-only", "chat", ""],
      ["bge-reranker", "rerank", ""],
      ["rerank-*", "rerank", "bge-reranker"],
    ]);
  });

  it("gives a global key every model of every kind and every alias", async () => {
    const data = await list(FLEET_GLOBAL_KEY);
    expect(data.filter((m) => !m.sluice_alias_of).map((m) => m.id)).toEqual(["qwen-coder", "chat-only", "bge-reranker", "remote-reranker", "cosyvoice", "whisper-large-v3", "sensevoice"]);
    expect(data.filter((m) => m.sluice_alias_of).length).toBe(4);
  });

  it("answers /v1/models/{id} for a model, an alias and a glob's match; 404 for what the key may not use", async () => {
    expect(await (await get("/v1/models/cosyvoice", FLEET_KEY)).json()).toMatchObject({ id: "cosyvoice", sluice_kind: "speech" });
    expect(await (await get("/v1/models/tts-1", FLEET_KEY)).json()).toMatchObject({ id: "tts-1", sluice_kind: "speech", sluice_alias_of: "cosyvoice" });
    expect(await (await get("/api/v1/models/rerank-english-v3.0", LISTED_KEY)).json()).toMatchObject({ id: "rerank-english-v3.0", sluice_kind: "rerank", sluice_alias_of: "bge-reranker" });
    await expectError(await get("/v1/models/cosyvoice", LISTED_KEY), 404, "model_not_found");
    await expectError(await get("/v1/models/chat-only", FLEET_KEY), 404, "model_not_found");
    // the SDK reads the list as it reads OpenAI's
    const ids: string[] = [];
    for await (const m of new OpenAI({ apiKey: LISTED_KEY, baseURL: `${f.gw.url}/v1` }).models.list()) ids.push(m.id);
    expect(ids).toEqual(["chat-only", "bge-reranker", "rerank-*"]);
  });
});

describe("usage per kind", () => {
  it("sums each kind with groupBy=kind: tokens for chat and rerank, characters for speech, seconds of audio for transcription", async () => {
    const openai = new OpenAI({ apiKey: FLEET_KEY, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    f.code[0].behave({ usage: { prompt_tokens: 12, completion_tokens: 5 } });
    await openai.completions.create({ model: "qwen-coder", prompt: "x" });
    await (await f.post("/v1/rerank", { model: "bge-reranker", query: "capital", documents: ["Paris is the capital", "cats"] })).json();
    await (await f.post("/v1/audio/speech", { model: "cosyvoice", input: "Hello there", voice: "alloy" })).arrayBuffer();
    await openai.audio.transcriptions.create({ file: await toFile(makeWav({ seconds: 2.5 }), "t.wav"), model: "whisper-1" });
    const rerank = f.rows.find((r) => r.model === "bge-reranker")!;

    const res = await get("/api/v1/usage?groupBy=kind", FLEET_GLOBAL_KEY);
    const body = (await res.json()) as { kinds: Array<Record<string, unknown>>; models: unknown[] };
    expect(body.models.length).toBe(4);
    expect(body.kinds).toEqual([
      { kind: "chat", requests: 1, inputTokens: 12, outputTokens: 5, points: 0.022 },
      { kind: "embeddings", requests: 0, inputTokens: 0, outputTokens: 0, points: 0 },
      { kind: "rerank", requests: 1, inputTokens: rerank.inputTokens, outputTokens: 0, points: rerank.points },
      { kind: "speech", requests: 1, inputTokens: 11, outputTokens: 0, points: 0.033 },
      // the model reports whole seconds (3 s for a 2.5 s file) and the larger of file and model is billed
      { kind: "transcription", requests: 1, inputTokens: 3, outputTokens: 0, points: 0.3 },
    ]);
    expect(await (await get("/api/v1/usage", FLEET_GLOBAL_KEY)).json()).not.toHaveProperty("kinds");
    expect((await expectError(await get("/api/v1/usage?groupBy=kinds", FLEET_GLOBAL_KEY), 400, "invalid_request")).param).toBe("groupBy");
  });
});
