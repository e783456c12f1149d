// The fields of a transcription upload (docs/fleet.md#transcription), OpenAI's names: `model`,
// `language`, `prompt`, `response_format`, `temperature`. Every field but `model`, `priority` (never a
// client's to send an engine: docs/routing.md#priority-and-fairness) and the file is forwarded as it
// came (repeated ones such as `timestamp_granularities[]` too); the known ones are checked first, so
// a wrong value is the client's 400, not the model server's.
import { z } from "zod";
import { badRequest } from "../http/errors.js";
import { modelName, parseBody } from "../http/validation.js";
import { PRIORITY_FIELD } from "../upstream/forward-priority.js";

/** Under the channel's `/v1`. */
export const TRANSCRIPTION_PATH = "/audio/transcriptions";

export const TRANSCRIPTION_FORMATS = ["json", "text", "srt", "vtt", "verbose_json"] as const;
export type TranscriptionFormat = (typeof TRANSCRIPTION_FORMATS)[number];

const fieldsSchema = z.looseObject({
  model: modelName(),
  language: z.string().min(1).max(32).optional(),
  prompt: z.string().optional(),
  response_format: z.enum(TRANSCRIPTION_FORMATS).default("json"),
  // a form field is text: "0.2" is the number 0.2, "" or "warm" are not numbers
  temperature: z
    .string()
    .regex(/^\s*\d+(\.\d+)?\s*$/, "expected a number")
    .transform(Number)
    .pipe(z.number().min(0).max(1))
    .optional(),
});

export interface TranscriptionRequest {
  model: string;
  language?: string;
  prompt?: string;
  responseFormat: TranscriptionFormat;
  temperature?: number;
  /** the fields sent on to the upstream, in order, `model` (the configured name goes instead) and `priority` left out */
  forward: Array<[string, string]>;
}

/** The checked fields; a 400 naming the first wrong one. */
export function parseTranscriptionFields(fields: Array<[string, string]>): TranscriptionRequest {
  const last: Record<string, string> = {};
  for (const [name, value] of fields) last[name] = value;
  // OpenAI streams transcripts only for its newest models; a stream would also hide the duration
  // the answer reports, which an unreadable file is billed by
  if (last.stream !== undefined && last.stream !== "false") {
    throw badRequest("invalid_request", "stream: streamed transcriptions are not supported; leave `stream` out.", "stream");
  }
  const parsed = parseBody(fieldsSchema, last);
  return {
    model: parsed.model,
    language: parsed.language,
    prompt: parsed.prompt,
    responseFormat: parsed.response_format,
    temperature: parsed.temperature,
    forward: fields.filter(([name]) => name !== "model" && name !== PRIORITY_FIELD),
  };
}

/** The fields the upstream gets: the configured model name first, then the client's others. */
export function transcriptionUpstreamFields(req: TranscriptionRequest, model: { model: string }): Array<[string, string]> {
  return [["model", model.model], ...req.forward];
}
