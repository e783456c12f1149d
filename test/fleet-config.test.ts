// config.json for the rest of a model fleet (docs/fleet.md): FastGPT's reRankModels,
// audioSpeechModels, whisperModel (and sttModels), llmModels[].completions and server.audioLimitBytes;
// one name per model across every kind, each served by a channel (or a rerank model's requestUrl).
import { describe, expect, it } from "vitest";
import { modelKinds } from "../src/config/fleet.js";
import { upstreamChannels } from "../src/upstream/channels.js";
import { parseConfig } from "../src/config/load.js";
import { problemsOf } from "./support/refusal.js";

const fleet = () => ({
  channels: [{ name: "c1", models: ["m1", "bge", "tts", "whisper-1", "sense"] }],
  llmModels: [{ model: "m1" }],
  reRankModels: [{ model: "bge", name: "BGE reranker", charsPointsPrice: 0.5 }],
  audioSpeechModels: [
    { model: "tts", name: "TTS", charsPointsPrice: 1, voices: [{ label: "Alloy", value: "alloy", bufferId: "openai-Alloy" }] },
  ],
  whisperModel: { model: "whisper-1", name: "Whisper", charsPointsPrice: 2 },
  sttModels: [{ model: "sense", name: "SenseVoice" }],
});

describe("config: rerank, speech, transcription and completions models", () => {
  it("accepts FastGPT's blocks as FastGPT writes them, and fills their defaults", () => {
    const c = parseConfig(fleet(), {});
    expect(c.reRankModels[0]).toEqual({ model: "bge", name: "BGE reranker", charsPointsPrice: 0.5, maxDocuments: 1000 });
    expect(c.audioSpeechModels[0]!.voices).toEqual([{ label: "Alloy", value: "alloy", bufferId: "openai-Alloy" }]);
    expect(c.whisperModel).toEqual({ model: "whisper-1", name: "Whisper", charsPointsPrice: 2 });
    expect(c.sttModels[0]).toEqual({ model: "sense", name: "SenseVoice", charsPointsPrice: 0 });
    expect(c.llmModels[0]!.completions).toBe(false);
    expect(c.server.audioLimitBytes).toBe(25 * 1024 * 1024);
  });

  it("leaves every block empty on a config without them", () => {
    const c = parseConfig({ channels: [{ name: "c1", models: ["m1"] }], llmModels: [{ model: "m1", completions: true }] }, {});
    expect(c).toMatchObject({ reRankModels: [], audioSpeechModels: [], sttModels: [] });
    expect(c.whisperModel).toBeUndefined();
    expect(c.llmModels[0]!.completions).toBe(true);
  });

  it("serves a rerank model by its own requestUrl without any channel", () => {
    const raw = {
      ...fleet(),
      channels: [{ name: "c1", models: ["m1", "tts", "whisper-1", "sense"] }],
      reRankModels: [{ model: "remote", requestUrl: "http://127.0.0.1:9997/v1/rerank", requestAuth: "${RR}" }],
    };
    const c = parseConfig(raw, { RR: "rerank-secret" });
    expect(c.reRankModels[0]).toMatchObject({ requestUrl: "http://127.0.0.1:9997/v1/rerank", requestAuth: "rerank-secret" });
  });

  it("names a model no channel serves, and a channel model no block defines", () => {
    const raw = { ...fleet(), channels: [{ name: "c1", models: ["m1", "ghost"] }] };
    expect(problemsOf(raw)).toEqual([
      'channels[0].models[1]: unknown model "ghost" (not in llmModels, vectorModels, reRankModels, audioSpeechModels, whisperModel or sttModels)',
      'reRankModels[0].model: no channel serves model "bge"',
      'audioSpeechModels[0].model: no channel serves model "tts"',
      'whisperModel.model: no channel serves model "whisper-1"',
      'sttModels[0].model: no channel serves model "sense"',
    ]);
  });

  it("refuses one name for two models, whatever their kinds, naming where it was first", () => {
    const raw = {
      ...fleet(),
      vectorModels: [{ model: "emb" }],
      channels: [{ name: "c1", models: ["m1", "bge", "tts", "whisper-1", "sense", "emb"] }],
      reRankModels: [{ model: "bge" }, { model: "m1" }],
      audioSpeechModels: [{ model: "tts" }, { model: "bge" }],
      sttModels: [{ model: "whisper-1" }, { model: "emb" }, { model: "sense" }],
    };
    expect(problemsOf(raw)).toEqual([
      'reRankModels[1].model: duplicate model: "m1" is also in llmModels',
      'audioSpeechModels[1].model: duplicate model: "bge" is also in reRankModels',
      'sttModels[0].model: duplicate model: "whisper-1" is also in whisperModel',
      'sttModels[1].model: duplicate model: "emb" is also in vectorModels',
    ]);
  });

  it("refuses a channel listing a rerank model that has its own requestUrl", () => {
    const raw = { ...fleet(), reRankModels: [{ model: "bge", requestUrl: "http://127.0.0.1:9997/v1/rerank" }] };
    expect(problemsOf(raw)).toEqual([
      'channels[0].models[1]: "bge" has its own requestUrl in reRankModels: list it in no channel, or drop its requestUrl',
    ]);
  });

  it("makes a channel for a requestUrl (that URL exactly, requestAuth its key, no health check), whose name no channel may take", () => {
    const raw = { ...fleet(), channels: [{ name: "c1", models: ["m1", "tts", "whisper-1", "sense"] }], reRankModels: [{ model: "bge", requestUrl: "http://127.0.0.1:9997/v1/rerank", requestAuth: "k-123" }] };
    const made = upstreamChannels(parseConfig(raw, {}));
    expect(made.map((c) => c.name)).toEqual(["c1", "rerank:bge"]);
    expect(made[1]).toMatchObject({ baseUrl: "http://127.0.0.1:9997/v1/rerank", key: "k-123", models: ["bge"], endpoint: true, healthCheck: { intervalMs: 0 }, priority: 0, connections: 128 });
    expect(modelKinds(parseConfig(raw, {}))).toEqual(new Map([["m1", "chat"], ["bge", "rerank"], ["tts", "speech"], ["whisper-1", "transcription"], ["sense", "transcription"]]));
    const taken = { ...raw, channels: [...raw.channels, { name: "rerank:bge", models: ["m1"] }] };
    expect(problemsOf(taken)).toEqual(['channels[1].name: "rerank:bge" names the channel made for the requestUrl of rerank model "bge": choose another name']);
  });

  it("lets an app list models of every kind, and refuses one as its default chat model", () => {
    const ok = { ...fleet(), apps: [{ id: "a1", model: "m1", models: ["m1", "bge", "tts", "whisper-1", "sense"] }] };
    expect(parseConfig(ok, {}).apps[0]!.models).toHaveLength(5);
    expect(problemsOf({ ...fleet(), apps: [{ id: "a1", model: "tts" }] })).toEqual([
      'apps[0].model: "tts" is not a chat model: the default model must be in llmModels',
    ]);
  });

  it("checks every field: types, bounds, URLs, and typos with the nearest name", () => {
    const raw = {
      ...fleet(),
      server: { audioLimitBytes: 0 },
      reRankModels: [{ model: "bge", maxDocuments: 1.5, requestUrl: "ftp://x", charsPointsPrice: -1 }],
      audioSpeechModels: [{ model: "tts", voices: [{ label: "A", value: "" }], voice: [] }],
      whisperModel: { model: "whisper-1", charsPointPrice: 1 },
      llmModels: [{ model: "m1", completions: "yes" }],
    };
    expect(problemsOf(raw)).toEqual(
      expect.arrayContaining([
        "server.audioLimitBytes: Too small: expected number to be >0",
        expect.stringMatching(/^reRankModels\[0\]\.maxDocuments: .*int/),
        expect.stringMatching(/^reRankModels\[0\]\.requestUrl: /),
        expect.stringMatching(/^reRankModels\[0\]\.charsPointsPrice: /),
        expect.stringMatching(/^audioSpeechModels\[0\]\.voices\[0\]\.value: /),
        'audioSpeechModels[0].voice: unknown key — did you mean "voices"?',
        'whisperModel.charsPointPrice: unknown key — did you mean "charsPointsPrice"?',
        expect.stringMatching(/^llmModels\[0\]\.completions: .*boolean/),
      ]),
    );
  });
});
