// What the config's model blocks add up to (docs/fleet.md): the models of each kind, named once
// here, and the kind of every configured model — which the runtime's lookups, the model list, the
// usage report and the metrics' label values read.
import type { AudioSpeechModelConfig, Config, ModelConfig, ReRankModelConfig, SttModelConfig, VectorModelConfig } from "./schema.js";

/** What a model is for: the config block it comes from, named like the routes that serve it. Chat
 *  models (`llmModels`) also serve the dialects and, with `completions: true`, legacy completions. */
export type ModelKind = "chat" | "embeddings" | "rerank" | "speech" | "transcription";

export const MODEL_KINDS: readonly ModelKind[] = ["chat", "embeddings", "rerank", "speech", "transcription"];

/** The config's model blocks. */
export type FleetConfig = Pick<Config, "llmModels" | "vectorModels" | "reRankModels" | "audioSpeechModels" | "whisperModel" | "sttModels">;

/** Each kind's models, in the config's order. */
export interface FleetModels {
  chat: ModelConfig[];
  embeddings: VectorModelConfig[];
  rerank: ReRankModelConfig[];
  speech: AudioSpeechModelConfig[];
  transcription: SttModelConfig[];
}

/** The one place that knows which config block holds which kind. */
export function fleetModels(config: FleetConfig): FleetModels {
  return { chat: config.llmModels, embeddings: config.vectorModels, rerank: config.reRankModels, speech: config.audioSpeechModels, transcription: sttModels(config) };
}

/** Each kind's models by name. */
export type FleetLookups = { [K in ModelKind]: Map<string, FleetModels[K][number]> };

export function fleetLookups(config: FleetConfig): FleetLookups {
  const fleet = fleetModels(config);
  const byName = <M extends { model: string }>(models: M[]) => new Map(models.map((m) => [m.model, m]));
  return { chat: byName(fleet.chat), embeddings: byName(fleet.embeddings), rerank: byName(fleet.rerank), speech: byName(fleet.speech), transcription: byName(fleet.transcription) };
}

/** Every configured model's kind, by name (a name is one model across every block). */
export function modelKinds(config: FleetConfig): Map<string, ModelKind> {
  const kinds = new Map<string, ModelKind>();
  const fleet = fleetModels(config);
  for (const kind of MODEL_KINDS) for (const m of fleet[kind]) if (!kinds.has(m.model)) kinds.set(m.model, kind);
  return kinds;
}

/** The speech-to-text models: FastGPT's one `whisperModel` and the `sttModels` list. */
export function sttModels(config: Pick<Config, "whisperModel" | "sttModels">): Config["sttModels"] {
  return [...(config.whisperModel ? [config.whisperModel] : []), ...config.sttModels];
}
