// The pipeline settles, not the kind (docs/architecture.md#pipeline): for every kind, whole and
// streamed, complete and cut, a request ends with exactly one usage row and every budget hold it
// made ended (settled or released) — a kind cannot forget to settle, since it only says what its
// answer used. The holds are counted at the shared state the pipeline admits through.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createMemoryClusterState } from "../src/cluster/memory.js";
import type { ClusterState } from "../src/cluster/types.js";
import type { UsageRow } from "../src/store/types.js";
import { createStore } from "../src/store/index.js";
import { startAudioUpstream, SPEECH_WAV, type AudioUpstream } from "./support/audio-upstream.js";
import { startCompletionsUpstream, type CompletionsUpstream } from "./support/completions-upstream.js";
import { startEmbeddingsUpstream, type EmbeddingsUpstream } from "./support/embeddings-upstream.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startRerankUpstream, type RerankUpstream } from "./support/rerank-upstream.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-settle-every-kind-01";
let chat: Upstream;
let embed: EmbeddingsUpstream;
let rerank: RerankUpstream;
let audio: AudioUpstream;
let code: CompletionsUpstream;
let gw: StartedGateway;
let state: ClusterState;
const rows: UsageRow[] = [];
/** budget holds made and not yet ended */
let open = 0;

/** The memory state, counting the holds its admits made and its settles (or releases) ended. */
function countingState(): ClusterState {
  const inner = createMemoryClusterState({ failures: 1000, cooldownMs: 1000 } as never);
  return Object.assign(Object.create(inner) as ClusterState, {
    async admit(...args: Parameters<ClusterState["admit"]>) {
      const result = await inner.admit(...args);
      const [holds, points] = args;
      // the cheap pre-check admits with no hold (max 0): only a hold must end
      if (result.ok && holds.length > 0 && (typeof points === "number" ? points : points.max) > 0) open++;
      return result;
    },
    async settle(...args: Parameters<ClusterState["settle"]>) {
      open--;
      return inner.settle(...args);
    },
  });
}

beforeAll(async () => {
  [chat, embed, rerank, audio, code] = await Promise.all([startUpstream(), startEmbeddingsUpstream(), startRerankUpstream(), startAudioUpstream(), startCompletionsUpstream()]);
  const store = createStore({ driver: "memory" });
  const record = store.recordUsage.bind(store);
  store.recordUsage = (row, scopes) => (rows.push(row), record(row, scopes));
  state = countingState();
  const channel = (name: string, baseUrl: string, models: string[]) => ({ name, baseUrl, models, healthCheck: { intervalMs: 0 } });
  gw = await startGateway(
    {
      channels: [
        channel("chat", chat.url, ["m"]),
        channel("embed", embed.url, ["e"]),
        channel("rerank", rerank.url, ["r"]),
        channel("audio", audio.url, ["tts", "stt"]),
        channel("code", code.url, ["c"]),
      ],
      llmModels: [
        { model: "m", maxContext: 4000, maxResponse: 500, charsPointsPrice: 1 },
        { model: "c", completions: true, maxContext: 2000, maxResponse: 100, charsPointsPrice: 1 },
      ],
      vectorModels: [{ model: "e", charsPointsPrice: 1 }],
      reRankModels: [{ model: "r", charsPointsPrice: 1 }],
      audioSpeechModels: [{ model: "tts", charsPointsPrice: 1, voices: [{ label: "Alloy", value: "alloy" }] }],
      sttModels: [{ model: "stt", charsPointsPrice: 1 }],
      routing: { maxAttempts: 1 },
      apps: [{ id: "a", model: "m", models: ["m", "c", "e", "r", "tts", "stt"], maxUsagePoints: 1_000_000 }],
      apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
    },
    { store, state },
  );
});
afterAll(async () => {
  await gw?.close();
  await gw?.store.close();
  await state?.close();
  await Promise.all([chat, embed, rerank, audio, code].map((u) => u?.close()));
});
afterEach(() => {
  chat.behave({ cutAfterChunks: null });
  audio.behave({ cutAfter: null });
  code.behave({ cutAfter: null });
});

const json = (path: string, body: unknown) =>
  fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` }, body: JSON.stringify(body) });

function transcription(): Promise<Response> {
  const form = new FormData();
  form.set("model", "stt");
  form.set("file", new Blob([new Uint8Array(SPEECH_WAV)], { type: "audio/wav" }), "tone.wav");
  return fetch(`${gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${KEY}` }, body: form });
}

const messages = [{ role: "user", content: "hi" }];
interface Case {
  name: string;
  send: () => Promise<Response>;
  /** makes the next answer break off after its first part */
  cut?: () => void;
}
const CASES: Case[] = [
  { name: "chat, whole", send: () => json("/v1/chat/completions", { model: "m", messages }) },
  { name: "chat, streamed", send: () => json("/v1/chat/completions", { model: "m", messages, stream: true }), cut: () => chat.behave({ cutAfterChunks: 2 }) },
  { name: "messages, whole", send: () => json("/v1/messages", { model: "m", max_tokens: 50, messages }) },
  { name: "messages, streamed", send: () => json("/v1/messages", { model: "m", max_tokens: 50, messages, stream: true }), cut: () => chat.behave({ cutAfterChunks: 2 }) },
  { name: "responses, whole", send: () => json("/v1/responses", { model: "m", input: "hi", store: false }) },
  { name: "responses, streamed", send: () => json("/v1/responses", { model: "m", input: "hi", store: false, stream: true }), cut: () => chat.behave({ cutAfterChunks: 2 }) },
  { name: "embeddings", send: () => json("/v1/embeddings", { model: "e", input: "hi" }) },
  { name: "rerank", send: () => json("/v1/rerank", { model: "r", query: "q", documents: ["a", "b"] }) },
  { name: "speech", send: () => json("/v1/audio/speech", { model: "tts", input: "hello there", voice: "alloy" }), cut: () => audio.behave({ cutAfter: 1 }) },
  { name: "transcription", send: transcription },
  { name: "completions, whole", send: () => json("/v1/completions", { model: "c", prompt: "def f(" }) },
  { name: "completions, streamed", send: () => json("/v1/completions", { model: "c", prompt: "def f(", stream: true }), cut: () => code.behave({ cutAfter: 1 }) },
];

/** One request, read to its end: one usage row of `status`, and no hold left open. */
async function endsSettled(c: Case, status: number): Promise<void> {
  const before = rows.length;
  const res = await c.send();
  expect(res.status).toBe(200);
  await res.arrayBuffer().catch(() => undefined); // a cut audio answer breaks off
  await expect.poll(() => rows.length).toBe(before + 1);
  expect(rows.at(-1)!.status).toBe(status);
  expect(open).toBe(0);
}

describe.each(CASES)("$name", (c) => {
  it("ends with one usage row and its budget hold ended", async () => {
    await endsSettled(c, 200);
    expect(rows.at(-1)!.points).toBeGreaterThan(0);
  });

  it.runIf(c.cut)("cut after its first byte: still one usage row (of the cut's status), the hold ended", async () => {
    c.cut!();
    await endsSettled(c, 502);
  });
});
