// A transcription answer (docs/fleet.md#transcription) is passed back as the model gave it: json,
// verbose_json, text, srt or vtt. Two things are read from it: its content type (the format's when
// the upstream names none), and the seconds of audio it reports — `duration` (verbose_json),
// `usage.seconds` (json, OpenAI's and vLLM's `{type: "duration"}` usage), or the last cue's end
// (srt, vtt) — which bill the file when they say more than its header (docs/fleet.md#transcription).
import type { IncomingHttpHeaders } from "node:http";
import { playRange, type AudioInfo } from "./audio-info.js";
import type { TranscriptionFormat } from "./transcription-request.js";

const FORMAT_TYPES: Record<TranscriptionFormat, string> = {
  json: "application/json",
  verbose_json: "application/json",
  text: "text/plain; charset=utf-8",
  srt: "text/plain; charset=utf-8",
  vtt: "text/vtt; charset=utf-8",
};

/** The client's headers for the answer: its content type, nothing else of the upstream's. */
export function transcriptionHeaders(upstream: IncomingHttpHeaders | Headers, format: TranscriptionFormat): Record<string, string> {
  const raw = upstream instanceof Headers ? upstream.get("content-type") : upstream["content-type"];
  return { "content-type": raw || FORMAT_TYPES[format] };
}

// `00:01:02,500 --> 00:01:05,000` (srt) or `01:02.500 --> 01:05.000` (vtt, hours optional)
const CUE_END = /-->\s*(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{3})/g;

/** The seconds of audio the answer reports, if it reports any. */
export function answerSeconds(body: Buffer | string, format: TranscriptionFormat): number | undefined {
  const text = typeof body === "string" ? body : body.toString("utf8");
  if (format === "json" || format === "verbose_json") {
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      return undefined;
    }
    const a = answer as { duration?: unknown; usage?: { type?: unknown; seconds?: unknown } } | null;
    const seconds = a?.duration ?? (a?.usage?.type === "duration" ? a.usage.seconds : undefined);
    return typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
  }
  if (format === "srt" || format === "vtt") {
    let end: number | undefined;
    for (const m of text.matchAll(CUE_END)) {
      const seconds = Number(m[1] ?? 0) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(m[4]) / 1000;
      end = Math.max(end ?? 0, seconds);
    }
    return end;
  }
  return undefined;
}

/** The seconds a transcription is billed by: the largest of the file's own duration, what the model
 *  reported and the least its size can play, within the most its size can play; the most when
 *  neither the file nor the model says. */
export function billedSeconds(info: AudioInfo, reported: number | undefined, bytes: number): number {
  const { least, most } = playRange(info, bytes);
  const told = [info.durationSeconds, reported].filter((s): s is number => s !== undefined);
  return told.length === 0 ? most : Math.min(most, Math.max(least, ...told));
}
