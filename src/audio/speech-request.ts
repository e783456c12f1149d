// The text-to-speech request body (docs/fleet.md#speech), OpenAI's `audio.speech` shape: `model`,
// `input`, `voice`, `response_format`, `speed`. Other fields (`instructions`, `stream_format`, …)
// pass through to the upstream untouched, but a client's `priority` never
// (docs/routing.md#priority-and-fairness). `voice` must be one of the model's voices when it lists any.
import { z } from "zod";
import type { AudioSpeechModelConfig } from "../config/schema.js";
import { badRequest } from "../http/errors.js";
import { modelName, parseBody } from "../http/validation.js";
import { withoutClientPriority } from "../upstream/forward-priority.js";

/** Under the channel's `/v1`. */
export const SPEECH_PATH = "/audio/speech";

export const SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

export const speechRequestSchema = z.looseObject({
  model: modelName(),
  input: z.string().min(1),
  voice: z.string().min(1),
  response_format: z.enum(SPEECH_FORMATS).optional(),
  speed: z.number().min(0.25).max(4).optional(),
});

export type SpeechRequest = z.infer<typeof speechRequestSchema>;

/** The validated request, or a 400 naming the first wrong field. */
export function parseSpeechRequest(body: unknown): SpeechRequest {
  return parseBody(speechRequestSchema, body);
}

/** 400 naming `voice` when the model lists voices and the request's is none of them. */
export function checkVoice(req: SpeechRequest, model: AudioSpeechModelConfig): void {
  if (model.voices.length === 0 || model.voices.some((v) => v.value === req.voice)) return;
  const known = model.voices.map((v) => `"${v.value}"`).join(", ");
  throw badRequest("unsupported_voice", `voice: ${model.model} has no such voice; use one of ${known}.`, "voice");
}

/** The upstream body: the client's but its `priority`, with the configured model name. */
export function speechUpstreamBody(req: SpeechRequest, model: AudioSpeechModelConfig): Record<string, unknown> {
  return withoutClientPriority({ ...req, model: model.model });
}

/** The characters speech is billed by: Unicode code points, so an emoji or a rare CJK character
 *  counts once, as a reader would count it. */
export function speechCharacters(input: string): number {
  let count = 0;
  for (const _ of input) count++;
  return count;
}
