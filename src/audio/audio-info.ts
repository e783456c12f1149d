// What an uploaded audio file is and how long it plays (docs/fleet.md#transcription), read by
// music-metadata from the file on disk, in a worker thread (./audio-parser.ts), once the file's first
// bytes have shown an audio container (./audio-sniff.ts): its headers only, never a scan of every
// frame (a 12 MB VBR MP3 without a Xing header takes 90 s to scan). A file it cannot read as audio
// is refused (400), and so is one it cannot read within the parser's budget: crafted bytes keep a
// parser busy for minutes, where a real 25 MB file takes a few ms.
// Some files hold no duration at all (a browser's MediaRecorder writes WebM without one), so the
// duration may be unknown; the budget then holds a bound made from the file's size. A header may
// also lie (a fake Xing frame makes 20 minutes of MP3 say 0.2 s), so the size bounds it from below
// too, and the answer is billed by the larger of it and what the model reports (./transcription-answer.ts).
import { badRequest } from "../http/errors.js";
import { AudioParsers } from "./audio-parser.js";
import { looksLikeAudio } from "./audio-sniff.js";
import { FILE_FIELD } from "../http/multipart-upload.js";

export interface AudioInfo {
  /** seconds of audio, when the file says (or its frames show) */
  durationSeconds?: number;
  container?: string;
  codec?: string;
}

const parsers = new AudioParsers();

// Opus's lowest bitrate: no speech codec packs a second of audio into fewer bits, so a file's size
// bounds its duration from above.
const MIN_BITS_PER_SECOND = 6_000;

// The highest bitrate of each family, so a file's size bounds its duration from below whatever its
// header says: MPEG Layer III 320 kbit/s (Layers I and II 448); PCM and lossless up to 24-bit
// 96 kHz stereo; any other codec (AAC, Opus, Vorbis) 576 kbit/s.
const MAX_BITS_PER_SECOND: Array<[RegExp, number]> = [
  [/layer\s*3/i, 320_000],
  [/layer\s*[12]/i, 448_000],
  [/pcm|flac|alac|wav|aiff|lossless/i, 4_608_000],
];
const OTHER_MAX_BITS_PER_SECOND = 576_000;

/** The file's format and duration; a 400 naming `file` when it is not audio music-metadata can
 *  read within the budget. `using`: the parsers (tests give their own, of another budget). */
export async function readAudioInfo(path: string, using = parsers): Promise<AudioInfo> {
  // a file that opens no audio container costs no parser (./audio-sniff.ts)
  const outcome = (await looksLikeAudio(path)) ? await using.parse(path) : ({ refused: "unreadable" } as const);
  if ("refused" in outcome) {
    const why = outcome.refused === "too_slow" ? `could not be read as audio within ${using.budgetMs / 1000} s` : "is not audio the gateway can read";
    throw badRequest("invalid_audio", `file: the file ${why} (send mp3, mp4, m4a, wav, webm, ogg or flac).`, FILE_FIELD);
  }
  const { format } = outcome;
  if (format.hasAudio === false) throw badRequest("invalid_audio", "file: the file holds no audio track.", FILE_FIELD);
  const duration = format.duration;
  return {
    durationSeconds: typeof duration === "number" && Number.isFinite(duration) && duration >= 0 ? duration : undefined,
    container: format.container,
    codec: format.codec,
  };
}

/** The seconds a file of `bytes` can play: at least what its size gives at its codec's highest
 *  bitrate, at most what it gives at the lowest speech bitrate (docs/fleet.md#transcription). */
export function playRange(info: AudioInfo, bytes: number): { least: number; most: number } {
  const what = `${info.codec ?? ""} ${info.container ?? ""}`;
  const max = MAX_BITS_PER_SECOND.find(([pattern]) => pattern.test(what))?.[1] ?? OTHER_MAX_BITS_PER_SECOND;
  return { least: (bytes * 8) / max, most: (bytes * 8) / MIN_BITS_PER_SECOND };
}

/** The seconds the budget holds for a file: its own duration kept within what its size allows,
 *  else the most its size allows. */
export function durationBound(info: AudioInfo, bytes: number): number {
  const { least, most } = playRange(info, bytes);
  return info.durationSeconds === undefined ? most : Math.min(most, Math.max(least, info.durationSeconds));
}
