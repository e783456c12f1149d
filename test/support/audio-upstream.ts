// A small real OpenAI-compatible audio server (node:http) for tests.
// - POST …/v1/audio/speech: real audio (a WAV or MP3 tone) sent in `chunks` pieces; with `hold` it
//   sends the first piece, then waits for `release()` before generating the rest, so a test can see
//   the first bytes arrive before the last exist.
// - POST …/v1/audio/transcriptions: multipart parsed by a streaming parser; records the fields and the
//   file's size and sha256 (so a test can prove the bytes arrived intact), answers in the requested
//   response_format (json with `usage.seconds`, verbose_json, text, srt, vtt).
// Speech can also send its length, and break its answer off after some pieces.
// Either answers an OpenAI error body with `status` on demand, or never answers (`hang`). `events`
// emits "speech" and "transcription" as each request is recorded.
import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Busboy } from "@fastify/busboy";
import { makeMp3, makeWav } from "./tone.js";

export interface AudioBehaviour {
  status: number;
  /** speech: pieces the audio is sent in, and the pause before each after the first */
  chunks: number;
  chunkDelayMs: number;
  /** speech: after the first piece, wait for `release()` */
  hold: boolean;
  /** speech: the content type sent; null sends none */
  contentType: string | null;
  /** speech: send the audio's Content-Length */
  contentLength: boolean;
  /** speech: after this many pieces, break the connection off (null: send them all) */
  cutAfter: number | null;
  /** transcription: the text, and the seconds the answer reports */
  text: string;
  seconds: number;
  /** read the request, then never answer */
  hang: boolean;
}

export interface RecordedSpeech {
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface RecordedTranscription {
  headers: Record<string, string>;
  /** every field but the file, repeated ones in order */
  fields: Array<[string, string]>;
  file?: { filename: string; mimeType: string; bytes: number; sha256: string };
}

export interface AudioUpstream {
  url: string;
  speech: RecordedSpeech[];
  transcriptions: RecordedTranscription[];
  events: EventEmitter;
  behave(change: Partial<AudioBehaviour>): void;
  /** resolves when a held speech answer has sent its first piece */
  firstPieceSent(): Promise<void>;
  /** lets a held speech answer go on */
  release(): void;
  /** the audio bytes a speech request in `format` is answered with */
  audioFor(format: string | undefined): Buffer;
  close(): Promise<void>;
}

export const SPEECH_WAV = makeWav({ seconds: 1, frequency: 660 });
export const SPEECH_MP3 = makeMp3({ seconds: 1, frequency: 660 });

export async function startAudioUpstream(initial: Partial<AudioBehaviour> = {}): Promise<AudioUpstream> {
  let b: AudioBehaviour = { status: 200, chunks: 4, chunkDelayMs: 0, hold: false, contentType: "", contentLength: false, cutAfter: null, text: "hello from the tone", seconds: 2.5, hang: false, ...initial };
  const events = new EventEmitter();
  const speech: RecordedSpeech[] = [];
  const transcriptions: RecordedTranscription[] = [];
  let onFirstPiece: (() => void) | undefined;
  let firstPiece = new Promise<void>((resolve) => (onFirstPiece = resolve));
  let release: (() => void) | undefined;
  let released = new Promise<void>((resolve) => (release = resolve));
  const audioFor = (format: string | undefined) => (format === "wav" || format === "pcm" ? SPEECH_WAV : SPEECH_MP3);

  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    const fail = () => res.writeHead(b.status, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `audio failed with ${b.status}` } }));
    if (req.method === "POST" && path.endsWith("/v1/audio/speech")) {
      void readJson(req).then(async (body) => {
        speech.push({ headers: flat(req), body });
        events.emit("speech");
        if (b.hang) return;
        if (b.status !== 200) return fail();
        await sendSpeech(res, body, b);
      });
      return;
    }
    if (req.method === "POST" && path.endsWith("/v1/audio/transcriptions")) {
      readTranscription(req).then(
        (rec) => {
          transcriptions.push(rec);
          events.emit("transcription");
          if (b.hang) return;
          if (b.status !== 200) return fail();
          sendTranscription(res, rec, b);
        },
        () => res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"bad multipart"}}'),
      );
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
  });

  async function sendSpeech(res: ServerResponse, body: Record<string, unknown>, at: AudioBehaviour): Promise<void> {
    const format = typeof body.response_format === "string" ? body.response_format : undefined;
    const audio = audioFor(format);
    const type = at.contentType === "" ? (format === "wav" ? "audio/wav" : "audio/mpeg") : at.contentType;
    res.writeHead(200, { ...(type ? { "content-type": type } : {}), ...(at.contentLength ? { "content-length": String(audio.length) } : {}) });
    const size = Math.ceil(audio.length / at.chunks);
    for (let i = 0; i < at.chunks; i++) {
      if (i === at.cutAfter) {
        res.destroy();
        return;
      }
      if (i === 1 && at.hold) {
        onFirstPiece?.();
        await released;
      } else if (i > 0 && at.chunkDelayMs > 0) await sleep(at.chunkDelayMs);
      // each piece handed to the socket before the next (and before a cut breaks the connection)
      await new Promise<void>((resolve) => res.write(audio.subarray(i * size, (i + 1) * size), () => resolve()));
    }
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    speech,
    transcriptions,
    events,
    behave: (change) => (b = { ...b, ...change }),
    firstPieceSent: () => firstPiece,
    release: () => {
      release?.();
      released = new Promise<void>((resolve) => (release = resolve));
      firstPiece = new Promise<void>((resolve) => (onFirstPiece = resolve));
    },
    audioFor,
    close: () =>
      new Promise<void>((resolve) => {
        release?.();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function flat(req: IncomingMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>));
    req.on("error", reject);
  });
}

function readTranscription(req: IncomingMessage): Promise<RecordedTranscription> {
  return new Promise((resolve, reject) => {
    const rec: RecordedTranscription = { headers: flat(req), fields: [] };
    const parser = new Busboy({ headers: req.headers as { "content-type": string } });
    parser.on("field", (name, value) => rec.fields.push([name, value]));
    parser.on("file", (_name, file, filename, _enc, mimeType) => {
      const hash = createHash("sha256");
      let bytes = 0;
      file.on("data", (c: Buffer) => {
        bytes += c.length;
        hash.update(c);
      });
      file.on("end", () => (rec.file = { filename, mimeType, bytes, sha256: hash.digest("hex") }));
    });
    parser.on("finish", () => resolve(rec));
    parser.on("error", reject);
    req.pipe(parser);
  });
}

function sendTranscription(res: ServerResponse, rec: RecordedTranscription, b: AudioBehaviour): void {
  const format = rec.fields.find(([name]) => name === "response_format")?.[1] ?? "json";
  const end = stamp(b.seconds);
  const answers: Record<string, [string, string]> = {
    json: ["application/json", JSON.stringify({ text: b.text, usage: { type: "duration", seconds: Math.ceil(b.seconds) } })],
    verbose_json: [
      "application/json",
      JSON.stringify({ task: "transcribe", language: "english", duration: b.seconds, text: b.text, segments: [{ id: 0, start: 0, end: b.seconds, text: b.text }] }),
    ],
    text: ["text/plain; charset=utf-8", `${b.text}\n`],
    srt: ["text/plain; charset=utf-8", `1\n${end.replace(/^/, "00:00:00,000 --> ")}\n${b.text}\n\n`],
    vtt: ["text/plain; charset=utf-8", `WEBVTT\n\n00:00:00.000 --> ${end.replace(",", ".")}\n${b.text}\n\n`],
  };
  const [type, body] = answers[format] ?? answers.json!;
  res.writeHead(200, { "content-type": type }).end(body);
}

/** `HH:MM:SS,mmm` */
function stamp(seconds: number): string {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)},${pad(ms % 1000, 3)}`;
}
