// Points of speech and transcription (docs/fleet.md#points): speech by characters, per 1,000 like
// every other price; transcription by minutes of audio, as FastGPT bills its whisperModel
// (`charsPointsPrice` × seconds / 60: a 90-second file is 1.5 minutes, not rounded up).
import type { AudioSpeechModelConfig, SttModelConfig } from "../config/schema.js";
import { computePoints, roundPoints } from "../tokens/points.js";

/** `charsPointsPrice` × characters / 1000. */
export function speechPoints(model: AudioSpeechModelConfig, characters: number): number {
  return computePoints({ inputPrice: 0, charsPointsPrice: model.charsPointsPrice }, characters, 0);
}

/** `charsPointsPrice` × minutes of audio. */
export function transcriptionPoints(model: SttModelConfig, seconds: number): number {
  return roundPoints((model.charsPointsPrice * seconds) / 60);
}
