// A gateway in front of a whole private model fleet (docs/fleet.md), for the rerank, speech,
// transcription, completions and catalog tests: for each kind two test model servers behind two
// channels (the first preferred, so a failing one fails over to the second), a rerank model served at
// its own requestUrl, aliases, and apps with and without `models` and with a small budget. The model
// servers live for the file; a fresh gateway (in-memory store, its usage rows recorded) for each test.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import type { UsageRow } from "../../src/store/types.js";
import { createStore } from "../../src/store/index.js";
import { startAudioUpstream, type AudioUpstream } from "./audio-upstream.js";
import { startCompletionsUpstream, type CompletionsUpstream } from "./completions-upstream.js";
import { startGateway, type StartedGateway } from "./gateway.js";
import { startRerankUpstream, type RerankUpstream } from "./rerank-upstream.js";

/** An app whose `models` list its default chat model and every model of the other kinds. */
export const FLEET_KEY = "sk-fleet-app-key-0001";
/** An app with 0.01 points of budget (its `models` as FLEET_KEY's). */
export const TIGHT_KEY = "sk-fleet-tight-key-0002";
/** An app whose `models` list a chat model and the rerank model only. */
export const LISTED_KEY = "sk-fleet-listed-key-0003";
export const FLEET_GLOBAL_KEY = "sk-fleet-global-key-0004";
/** An app without `models`: its default chat model only (no rerank, speech or transcription model). */
export const BARE_KEY = "sk-fleet-bare-key-0006";
export const REQUEST_AUTH = "rr-own-url-secret-0005";
/** server.audioLimitBytes in these tests */
export const AUDIO_LIMIT = 256 * 1024;

export interface Fleet {
  /** server.audioSpoolDir: where this file's gateways spool uploads */
  spoolDir: string;
  rerank: [RerankUpstream, RerankUpstream];
  /** serves the rerank model with its own requestUrl */
  ownRerank: RerankUpstream;
  audio: [AudioUpstream, AudioUpstream];
  code: [CompletionsUpstream, CompletionsUpstream];
  gw: StartedGateway;
  /** every usage row the gateway wrote, in order */
  rows: UsageRow[];
  /** the gateway's /metrics text */
  metrics(): Promise<string>;
  /** POST a JSON body with a key (FLEET_KEY unless given; null sends none) */
  post(path: string, body: unknown, key?: string | null): Promise<Response>;
}

/** Every model of the fleet but `chat-only`. */
const FLEET_MODELS = ["qwen-coder", "bge-reranker", "remote-reranker", "cosyvoice", "whisper-large-v3", "sensevoice"];

export function fleetConfig(f: Pick<Fleet, "rerank" | "ownRerank" | "audio" | "code" | "spoolDir">, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const channel = (name: string, baseUrl: string, models: string[], priority: number) => ({ name, baseUrl, key: `channel-key-${name}`, models, priority, healthCheck: { intervalMs: 0 } });
  return {
    server: { audioLimitBytes: AUDIO_LIMIT, audioSpoolDir: f.spoolDir },
    channels: [
      channel("rerank-a", f.rerank[0].url, ["bge-reranker"], 1),
      channel("rerank-b", f.rerank[1].url, ["bge-reranker"], 0),
      channel("audio-a", f.audio[0].url, ["cosyvoice", "whisper-large-v3", "sensevoice"], 1),
      channel("audio-b", f.audio[1].url, ["cosyvoice", "whisper-large-v3", "sensevoice"], 0),
      channel("code-a", f.code[0].url, ["qwen-coder", "chat-only"], 1),
      channel("code-b", f.code[1].url, ["qwen-coder"], 0),
    ],
    llmModels: [
      { model: "qwen-coder", name: "Qwen Coder", completions: true, maxContext: 2000, maxResponse: 100, inputPrice: 1, outputPrice: 2 },
      { model: "chat-only", maxContext: 2000, maxResponse: 100 },
    ],
    reRankModels: [
      { model: "bge-reranker", name: "BGE reranker", charsPointsPrice: 2, maxDocuments: 8 },
      { model: "remote-reranker", requestUrl: `${f.ownRerank.url}/custom/rerank?v=1`, requestAuth: REQUEST_AUTH },
    ],
    audioSpeechModels: [
      { model: "cosyvoice", name: "CosyVoice", charsPointsPrice: 3, voices: [{ label: "Alloy", value: "alloy" }, { label: "Nova", value: "nova" }] },
    ],
    whisperModel: { model: "whisper-large-v3", name: "Whisper", charsPointsPrice: 6 },
    sttModels: [{ model: "sensevoice", charsPointsPrice: 1 }],
    aliases: { "tts-1": "cosyvoice", "whisper-1": "whisper-large-v3", "rerank-*": "bge-reranker", "gpt-3.5-turbo-instruct": "qwen-coder" },
    apps: [
      { id: "fleet", model: "qwen-coder", models: FLEET_MODELS },
      { id: "tight", model: "qwen-coder", models: FLEET_MODELS, maxUsagePoints: 0.01 },
      { id: "listed", model: "chat-only", models: ["chat-only", "bge-reranker"] },
      { id: "bare", model: "qwen-coder" },
    ],
    apiKeys: [
      { name: "fleet-key", kind: "app", appId: "fleet", key: FLEET_KEY },
      { name: "tight-key", kind: "app", appId: "tight", key: TIGHT_KEY },
      { name: "listed-key", kind: "app", appId: "listed", key: LISTED_KEY },
      { name: "ops", kind: "global", key: FLEET_GLOBAL_KEY },
      { name: "bare-key", kind: "app", appId: "bare", key: BARE_KEY },
    ],
    ...extra,
  };
}

/** The fleet's model servers for the file, a fresh gateway for each test. Read the fields inside tests only. */
export function useFleet(extra: Record<string, unknown> = {}): Fleet {
  const f = { rows: [] as UsageRow[] } as unknown as Fleet;
  beforeAll(async () => {
    f.spoolDir = await mkdtemp(join(tmpdir(), "sluice-spool-test-"));
    f.rerank = [await startRerankUpstream(), await startRerankUpstream()];
    f.ownRerank = await startRerankUpstream();
    f.audio = [await startAudioUpstream(), await startAudioUpstream()];
    f.code = [await startCompletionsUpstream(), await startCompletionsUpstream()];
  });
  afterAll(async () => {
    await Promise.all([...f.rerank, f.ownRerank, ...f.audio, ...f.code].map((u) => u.close()));
    await rm(f.spoolDir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    const store = createStore({ driver: "memory" });
    const record = store.recordUsage.bind(store);
    f.rows = [];
    store.recordUsage = (row, scopes) => {
      f.rows.push(row);
      return record(row, scopes);
    };
    f.gw = await startGateway(fleetConfig(f, extra), { store });
    f.metrics = () => fetch(`${f.gw.url}/metrics`).then((r) => r.text());
    f.post = (path, body, key = FLEET_KEY) =>
      fetch(`${f.gw.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(body),
      });
  });
  afterEach(async () => {
    await f.gw.close();
    await f.gw.store.close();
    for (const u of [...f.rerank, f.ownRerank]) u.behave({ status: 200, shape: "vllm" });
    for (const u of f.audio) u.behave({ status: 200, seconds: 2.5, hang: false, hold: false, chunks: 4, chunkDelayMs: 0, contentType: "", contentLength: false, cutAfter: null });
    for (const u of f.code) u.behave({ status: 200, usage: { prompt_tokens: 5, completion_tokens: 7 }, cutAfter: null, chunks: 3, ignoreStream: false });
  });
  return f;
}
