// Speech (docs/fleet.md#speech): the request checked field by field, the voice against the model's
// list, characters and points; the client's headers made from the upstream's. Through the gateway
// over real sockets: the first audio bytes reach the client before the upstream has made the last,
// the openai SDK's audio.speech.create gets real audio, bytes intact; failover, a budget refusal, an
// answer cut short (billed for what was sent), usage rows and metrics.
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseFile } from "music-metadata";
import OpenAI from "openai";
import { request } from "undici";
import { describe, expect, it, vi } from "vitest";
import { speechPoints } from "../src/audio/points.js";
import { speechHeaders } from "../src/audio/speech-headers.js";
import { sentCharacters } from "../src/audio/speech-spec.js";
import { checkVoice, parseSpeechRequest, speechCharacters, speechUpstreamBody } from "../src/audio/speech-request.js";
import type { AudioSpeechModelConfig } from "../src/config/schema.js";
import { SPEECH_MP3, SPEECH_WAV } from "./support/audio-upstream.js";
import { expectError } from "./support/fixtures.js";
import { FLEET_KEY, LISTED_KEY, TIGHT_KEY, useFleet } from "./support/fleet.js";
import { refusal } from "./support/refusal.js";

const MODEL: AudioSpeechModelConfig = {
  model: "cosyvoice",
  name: "CosyVoice",
  charsPointsPrice: 3,
  voices: [
    { label: "Alloy", value: "alloy" },
    { label: "Nova", value: "nova" },
  ],
};

describe("speech request", () => {
  it("keeps OpenAI's other fields and sends the configured model name", () => {
    const req = parseSpeechRequest({ model: "tts", input: "Hi", voice: "alloy", response_format: "wav", speed: 1.5, instructions: "calm" });
    expect(speechUpstreamBody(req, MODEL)).toEqual({ model: "cosyvoice", input: "Hi", voice: "alloy", response_format: "wav", speed: 1.5, instructions: "calm" });
  });

  it("never sends the client's own priority (before: passed through, which an engine without the priority policy refuses)", () => {
    const req = parseSpeechRequest({ model: "tts", input: "Hi", voice: "alloy", priority: -100, instructions: "calm" });
    expect(speechUpstreamBody(req, MODEL)).toEqual({ model: "cosyvoice", input: "Hi", voice: "alloy", instructions: "calm" });
  });

  it.each([
    [{ model: "tts", voice: "alloy" }, "input", "input is required"],
    [{ model: "tts", input: "", voice: "alloy" }, "input", "input: must not be empty"],
    [{ model: "tts", input: "Hi" }, "voice", "voice is required"],
    [{ model: "tts", input: "Hi", voice: "alloy", response_format: "ogg" }, "response_format", 'response_format: must be one of "mp3", "opus", "aac", "flac", "wav", "pcm"'],
    [{ model: "tts", input: "Hi", voice: "alloy", speed: 9 }, "speed", "speed: must be at most 4"],
  ])("refuses %j with a 400 naming %s", (body, param, message) => {
    const err = refusal(() => parseSpeechRequest(body));
    expect(err).toMatchObject({ status: 400, param, message });
  });

  it("refuses a voice the model does not list, naming `voice`; any voice passes when it lists none", () => {
    const req = parseSpeechRequest({ model: "tts", input: "Hi", voice: "echo" });
    expect(refusal(() => checkVoice(req, MODEL))).toMatchObject({
      status: 400,
      code: "unsupported_voice",
      param: "voice",
      message: 'voice: cosyvoice has no such voice; use one of "alloy", "nova".',
    });
    expect(() => checkVoice({ ...req, voice: "nova" }, MODEL)).not.toThrow();
    expect(() => checkVoice(req, { ...MODEL, voices: [] })).not.toThrow();
  });

  it("counts characters as code points and prices them per 1,000", () => {
    expect(speechCharacters("héllo 你好 👋")).toBe(10);
    expect(speechPoints(MODEL, 500)).toBe(1.5);
  });

  it("bills a cut answer none of its characters when no audio was sent, a share by the bytes sent when the length is known, else all", () => {
    expect(sentCharacters(100, 0, 1000)).toBe(0);
    expect(sentCharacters(100, 250, 1000)).toBe(25);
    expect(sentCharacters(100, 251, 1000)).toBe(26);
    expect(sentCharacters(100, 2000, 1000)).toBe(100);
    expect(sentCharacters(100, 1, undefined)).toBe(100);
  });
});

describe("speech headers", () => {
  it("keeps the content type, length and encoding, and drops hop-by-hop and every other header", () => {
    const upstream = {
      "content-type": "audio/wav",
      "content-length": "1234",
      connection: "keep-alive",
      "keep-alive": "timeout=5",
      "x-internal-node": "gpu-3",
      server: "uvicorn",
      "set-cookie": ["a=b"],
    };
    expect(speechHeaders(upstream, "wav")).toEqual({ "content-type": "audio/wav", "content-length": "1234", "x-accel-buffering": "no" });
  });

  it("drops a length a transfer coding frames, and names the format's type when the upstream names none", () => {
    expect(speechHeaders(new Headers({ "transfer-encoding": "chunked", "content-length": "10" }), "flac")).toEqual({ "content-type": "audio/flac", "x-accel-buffering": "no" });
    expect(speechHeaders({}, undefined)["content-type"]).toBe("audio/mpeg");
    expect(speechHeaders({ "content-length": "12abc" }, "opus")).toEqual({ "content-type": "audio/ogg", "x-accel-buffering": "no" });
  });
});

describe("speech through the gateway", () => {
  const f = useFleet();
  const speak = (body: Record<string, unknown>, key: string | null = FLEET_KEY, signal?: AbortSignal) =>
    request(`${f.gw.url}/v1/audio/speech`, { method: "POST", headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: JSON.stringify(body), signal });
  const text = "Hello there"; // 11 characters: 0.033 points at 3 per 1,000

  it("streams: the client holds the first bytes while the model has not made the rest; billed by characters", async () => {
    const up = f.audio[0];
    up.behave({ hold: true, chunks: 4 });
    const res = await speak({ model: "tts-1", input: text, voice: "nova", response_format: "wav" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("audio/wav");
    const body = Readable.from(res.body);
    const [first] = (await once(body, "data")) as [Buffer];
    await up.firstPieceSent(); // the model is waiting to make the rest
    expect(first.length).toBeLessThan(SPEECH_WAV.length);
    expect(SPEECH_WAV.subarray(0, first.length).equals(first)).toBe(true);
    body.pause();
    up.release();
    const all: Buffer[] = [first];
    body.on("data", (c: Buffer) => all.push(c));
    body.resume();
    await once(body, "end");
    expect(Buffer.concat(all).equals(SPEECH_WAV)).toBe(true);
    expect(up.speech.at(-1)!.body).toEqual({ model: "cosyvoice", input: text, voice: "nova", response_format: "wav" });
    expect(up.speech.at(-1)!.headers.authorization).toBe("Bearer channel-key-audio-a");
    expect(f.rows).toEqual([expect.objectContaining({ appId: "fleet", model: "cosyvoice", channel: "audio-a", inputTokens: 11, outputTokens: 0, points: 0.033, status: 200 })]);
  });

  it("gives the openai SDK's audio.speech.create real audio, streamed to a file, bytes intact", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sluice-speech-"));
    try {
      const openai = new OpenAI({ apiKey: FLEET_KEY, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      const response = await openai.audio.speech.create({ model: "tts-1", input: "One second of tone.", voice: "alloy" });
      expect(response.headers.get("content-type")).toBe("audio/mpeg");
      const file = join(dir, "speech.mp3");
      await pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream), createWriteStream(file));
      expect((await readFile(file)).equals(SPEECH_MP3)).toBe(true);
      const meta = await parseFile(file, { duration: true });
      expect(meta.format.duration).toBeGreaterThan(0.9);
      expect(f.audio[0].speech.at(-1)!.body).toEqual({ model: "cosyvoice", input: "One second of tone.", voice: "alloy" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("fails over to the second channel when the first answers 503", async () => {
    f.audio[0].behave({ status: 503 });
    const res = await speak({ model: "cosyvoice", input: text, voice: "alloy" });
    expect(res.statusCode).toBe(200);
    expect(Buffer.from(await res.body.arrayBuffer()).equals(SPEECH_MP3)).toBe(true);
    expect(f.rows).toEqual([expect.objectContaining({ channel: "audio-b", status: 200, inputTokens: 11 })]);
    expect(await f.metrics()).toContain('sluice_upstream_attempts_total{channel="audio-a",outcome="retried"} 1');
  });

  it("refuses a budget that cannot pay for the characters with 429 insufficient_quota, calling no model", async () => {
    const before = f.audio[0].speech.length;
    const res = await speak({ model: "cosyvoice", input: text, voice: "alloy" }, TIGHT_KEY);
    expect(res.statusCode).toBe(429);
    expect(((await res.body.json()) as { error: { code: string } }).error.code).toBe("insufficient_quota");
    expect(f.audio[0].speech.length).toBe(before);
    // 2 characters (0.006 points) fit
    expect((await speak({ model: "cosyvoice", input: "Hi", voice: "alloy" }, TIGHT_KEY)).statusCode).toBe(200);
  });

  it("ends an answer the model broke off: a declared length is broken off too, and the characters billed as the bytes sent", async () => {
    f.audio[0].behave({ contentLength: true, cutAfter: 2, chunks: 4 });
    const res = await speak({ model: "cosyvoice", input: text, voice: "alloy", response_format: "wav" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-length"]).toBe(String(SPEECH_WAV.length));
    await expect(res.body.arrayBuffer()).rejects.toThrow();
    const sent = 2 * Math.ceil(SPEECH_WAV.length / 4);
    const billed = Math.ceil((11 * sent) / SPEECH_WAV.length);
    await vi.waitFor(() => expect(f.rows).toEqual([expect.objectContaining({ status: 502, finishReason: "upstream_error", inputTokens: billed, points: speechPoints(MODEL, billed) })]));
  });

  it("ends an answer of unknown length cleanly when the model broke it off, billing every character", async () => {
    f.audio[0].behave({ cutAfter: 1, chunks: 4 });
    const res = await speak({ model: "cosyvoice", input: text, voice: "alloy", response_format: "wav" });
    const got = Buffer.from(await res.body.arrayBuffer());
    expect(got.length).toBe(Math.ceil(SPEECH_WAV.length / 4));
    expect(f.rows).toEqual([expect.objectContaining({ status: 502, finishReason: "upstream_error", inputTokens: 11 })]);
  });

  it("bills a client that left mid-audio every character once the model answered (499 client_abort; before: 3 of 11, the bytes relayed)", async () => {
    f.audio[0].behave({ hold: true, contentLength: true, chunks: 4 });
    const abort = new AbortController();
    const res = await speak({ model: "cosyvoice", input: text, voice: "alloy", response_format: "wav" }, FLEET_KEY, abort.signal);
    res.body.on("error", () => undefined);
    await once(res.body, "data");
    await f.audio[0].firstPieceSent();
    abort.abort();
    await vi.waitFor(() => expect(f.rows).toEqual([expect.objectContaining({ status: 499, finishReason: "client_abort", inputTokens: 11, points: speechPoints(MODEL, 11) })]));
    f.audio[0].release();
  });

  it("refuses an unknown voice, a model the app may not use, and a missing key in OpenAI's shape, calling no model", async () => {
    const before = f.audio[0].speech.length;
    const voice = await speak({ model: "cosyvoice", input: "Hi", voice: "onyx" });
    expect(voice.statusCode).toBe(400);
    expect(((await voice.body.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: "unsupported_voice", param: "voice" });
    await expectError(await f.post("/v1/audio/speech", { model: "cosyvoice", input: "Hi", voice: "alloy" }, LISTED_KEY), 404, "model_not_found");
    await expectError(await f.post("/v1/audio/speech", { model: "cosyvoice", input: "Hi", voice: "alloy" }, null), 401, "missing_api_key");
    await expectError(await f.post("/v1/audio/speech", { model: "cosyvoice", input: "", voice: "alloy" }), 400, "invalid_request");
    expect(f.audio[0].speech.length).toBe(before);
  });

  it('counts requests, points and latency under route="speech"', async () => {
    await (await speak({ model: "cosyvoice", input: text, voice: "alloy" })).body.dump();
    const metrics = await f.metrics();
    expect(metrics).toContain('sluice_requests_total{route="speech",model="cosyvoice",app="fleet",status="200"} 1');
    expect(metrics).toContain('sluice_route_points_total{route="speech",model="cosyvoice",app="fleet"} 0.033');
    expect(metrics).toContain('sluice_request_duration_seconds_count{route="speech"} 1');
  });
});
