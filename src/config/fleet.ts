// What the config's model blocks add up to (docs/fleet.md): the kind of every configured model.
import type { Config } from "./schema.js";

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
