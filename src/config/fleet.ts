// What the config's model blocks add up to (docs/fleet.md): the kind of every configured model, and
// the channels the gateway makes for rerank models served at their own `requestUrl`, so that those
// are routed, metered, broken and reported like every configured channel.
import type { UpstreamChannelConfig } from "../upstream/types.js";
import { channelSchema, type Config, type ReRankModelConfig } from "./schema.js";

/** What a model is for: the config block it comes from, named like the routes that serve it. Chat
 *  models (`llmModels`) also serve the dialects and, with `completions: true`, legacy completions. */
export type ModelKind = "chat" | "embeddings" | "rerank" | "speech" | "transcription";

export const MODEL_KINDS: readonly ModelKind[] = ["chat", "embeddings", "rerank", "speech", "transcription"];

/** Every configured model's kind, by name (a name is one model across every block). */
export function modelKinds(config: Pick<Config, "llmModels" | "vectorModels" | "reRankModels" | "audioSpeechModels" | "whisperModel" | "sttModels">): Map<string, ModelKind> {
  const kinds = new Map<string, ModelKind>();
  const add = (models: Array<{ model: string }>, kind: ModelKind) => models.forEach((m) => kinds.has(m.model) || kinds.set(m.model, kind));
  add(config.llmModels, "chat");
  add(config.vectorModels, "embeddings");
  add(config.reRankModels, "rerank");
  add(config.audioSpeechModels, "speech");
  add(sttModels(config), "transcription");
  return kinds;
}

/** The speech-to-text models: FastGPT's one `whisperModel` and the `sttModels` list. */
export function sttModels(config: Pick<Config, "whisperModel" | "sttModels">): Config["sttModels"] {
  return [...(config.whisperModel ? [config.whisperModel] : []), ...config.sttModels];
}

/** The name of the channel made for a rerank model's own `requestUrl`. */
export const requestUrlChannelName = (model: string) => `rerank:${model}`;

/** The configured channels, then one per rerank model with a `requestUrl`: that URL exactly, its
 *  `requestAuth` as the bearer key, the channel defaults otherwise, and no health check (the URL
 *  answers posts only). */
export function upstreamChannels(config: Pick<Config, "channels" | "reRankModels" | "routing">): UpstreamChannelConfig[] {
  const own = config.reRankModels.filter((m): m is ReRankModelConfig & { requestUrl: string } => m.requestUrl !== undefined);
  // the queue's aging is the routing's, the same on every channel
  const { agingMs } = config.routing;
  return [
    ...config.channels.map((c) => ({ ...c, agingMs })),
    ...own.map((m) => ({
      ...channelSchema.parse({ name: requestUrlChannelName(m.model), baseUrl: m.requestUrl, key: m.requestAuth ?? "", models: [m.model], healthCheck: { intervalMs: 0 } }),
      endpoint: true,
      agingMs,
    })),
  ];
}
