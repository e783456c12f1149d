// Transcription (docs/fleet.md#transcription): the multipart upload streamed to a temporary file
// (413 early past the limit, 400 for no, empty or non-audio files), the duration read by
// music-metadata, the fields checked, the upstream's multipart body written around the file (a fresh
// stream per attempt), the answer's reported seconds, points per minute. Through the gateway over
// real sockets with the openai SDK and a real WAV/MP3: failover, a budget refusal, usage rows and
// metrics; the temporary file is gone after every request, however it ended.
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { Busboy } from "@fastify/busboy";
import OpenAI, { toFile } from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { durationBound, readAudioInfo } from "../src/audio/audio-info.js";
import { AudioParsers } from "../src/audio/audio-parser.js";
import { opensAudio } from "../src/audio/audio-sniff.js";
import { createMultipartBody } from "../src/audio/multipart-body.js";
import { transcriptionPoints } from "../src/audio/points.js";
import { answerSeconds, billedSeconds, transcriptionHeaders } from "../src/audio/transcription-answer.js";
import { parseTranscriptionFields, transcriptionUpstreamFields } from "../src/audio/transcription-request.js";
import type { SttModelConfig } from "../src/config/schema.js";
import { expectError } from "./support/fixtures.js";
import { AUDIO_LIMIT, FLEET_KEY, LISTED_KEY, TIGHT_KEY, fleetConfig, useFleet } from "./support/fleet.js";
import { startGateway } from "./support/gateway.js";
import { makeMp3, makeWav, withFakeXing } from "./support/tone.js";
import { refusal } from "./support/refusal.js";

const MODEL: SttModelConfig = { model: "whisper-large-v3", name: "Whisper", charsPointsPrice: 6 };
const WAV = makeWav({ seconds: 2.5 });
const MP3 = makeMp3({ seconds: 3 });
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "sluice-stt-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("transcription fields", () => {
  it("checks the known fields and forwards all but model, repeated ones in order", () => {
    const req = parseTranscriptionFields([
      ["model", "whisper-1"],
      ["language", "en"],
      ["temperature", "0.2"],
      ["timestamp_granularities[]", "word"],
      ["timestamp_granularities[]", "segment"],
      ["response_format", "verbose_json"],
    ]);
    expect(req).toMatchObject({ model: "whisper-1", language: "en", temperature: 0.2, responseFormat: "verbose_json" });
    expect(transcriptionUpstreamFields(req, MODEL)).toEqual([
      ["model", "whisper-large-v3"],
      ["language", "en"],
      ["temperature", "0.2"],
      ["timestamp_granularities[]", "word"],
      ["timestamp_granularities[]", "segment"],
      ["response_format", "verbose_json"],
    ]);
    expect(parseTranscriptionFields([["model", "m"]]).responseFormat).toBe("json");
  });

  it("never forwards the client's own priority (before: forwarded, which an engine without the priority policy refuses)", () => {
    const req = parseTranscriptionFields([
      ["model", "whisper-1"],
      ["priority", "-100"],
      ["language", "en"],
    ]);
    expect(transcriptionUpstreamFields(req, MODEL)).toEqual([
      ["model", "whisper-large-v3"],
      ["language", "en"],
    ]);
  });

  it.each<[Array<[string, string]>, string, string]>([
    [[], "model", "model is required"],
    [[["model", "m"], ["response_format", "mp3"]], "response_format", 'response_format: must be one of "json", "text", "srt", "vtt", "verbose_json"'],
    [[["model", "m"], ["temperature", "warm"]], "temperature", "temperature: expected a number"],
    [[["model", "m"], ["temperature", "1.5"]], "temperature", "temperature: must be at most 1"],
    [[["model", "m"], ["stream", "true"]], "stream", "stream: streamed transcriptions are not supported; leave `stream` out."],
  ])("refuses %j with a 400 naming %s", (fields, param, message) => {
    expect(refusal(() => parseTranscriptionFields(fields))).toMatchObject({ status: 400, param, message });
  });
});

describe("audio duration and points", () => {
  it("reads a WAV's and an MP3's duration from the file", async () => {
    await writeFile(join(dir, "t.wav"), WAV);
    await writeFile(join(dir, "t.mp3"), MP3);
    expect(await readAudioInfo(join(dir, "t.wav"))).toMatchObject({ durationSeconds: 2.5, container: "WAVE" });
    const mp3 = await readAudioInfo(join(dir, "t.mp3"));
    expect(mp3.durationSeconds).toBeGreaterThanOrEqual(3);
    expect(mp3.durationSeconds).toBeLessThan(3.2); // the encoder pads its last frame
    await rm(join(dir, "t.wav"));
    await rm(join(dir, "t.mp3"));
  });

  it.each([
    ["text", Buffer.from("hello, this is not audio at all\n".repeat(20))],
    ["a PNG", Buffer.concat([Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"), Buffer.alloc(200)])],
  ])("refuses %s with a 400 naming file", async (_, bytes) => {
    const path = join(dir, "not-audio");
    await writeFile(path, bytes);
    await expect(readAudioInfo(path)).rejects.toMatchObject({ status: 400, code: "invalid_audio", param: "file" });
    await rm(path);
  });

  it("gives up on bytes crafted to keep the parser busy, within its time budget", async () => {
    // 256 KB of 0xFF reads as an MPEG frame sync at every byte: minutes of parsing without a budget
    // (behind an ID3 tag, as the first look at a file lets them by: test/audio-refusal.test.ts)
    const path = join(dir, "ff.mp3");
    await writeFile(path, Buffer.concat([Buffer.from("ID3\x03\0\0\0\0\0\0", "latin1"), Buffer.alloc(256 * 1024, 0xff)]));
    const started = performance.now();
    await expect(readAudioInfo(path, new AudioParsers(300))).rejects.toMatchObject({ status: 400, code: "invalid_audio", message: expect.stringContaining("within 0.3 s") });
    expect(performance.now() - started).toBeLessThan(2_000);
    await rm(path);
  });

  it("takes a file for audio by its first bytes: containers music-metadata reads, MPEG and ADTS frames that exist", () => {
    const head = (hex: string, text = "") => Buffer.concat([Buffer.from(hex, "hex"), Buffer.from(text, "latin1")]);
    const audio = [
      WAV.subarray(0, 16),
      MP3.subarray(0, 16),
      Buffer.from("ID3\x04\0\0\0\0\0\0", "latin1"),
      Buffer.from("fLaC\0\0\0\x22", "latin1"),
      Buffer.from("OggS\0\x02", "latin1"),
      head("1a45dfa3a3428286"),
      head("00000020", "ftypM4A isom"),
      Buffer.from("FORM\0\0\0\0AIFF", "latin1"),
      head("fffb9064"), // MPEG-1 Layer III, 128 kbit/s, 44.1 kHz
      head("fff15080"), // ADTS AAC, 44.1 kHz
    ];
    const other = [
      Buffer.alloc(16, 0xff),
      Buffer.alloc(16, 0),
      Buffer.from("RIFF\0\0\0\0AVI LIST", "latin1"),
      head("fffbf064"), // a bitrate that does not exist
      head("fffb9c64"), // a reserved sample rate
      head("fff13c80"), // a sampling frequency index that does not exist
      Buffer.from("ID"),
      Buffer.alloc(0),
    ];
    audio.forEach((bytes, i) => expect(opensAudio(bytes), `audio ${i}`).toBe(true));
    other.forEach((bytes, i) => expect(opensAudio(bytes), `other ${i}`).toBe(false));
  });

  it("bounds a duration by the file's size both ways, and bills the larger of the file's and the model's within them", () => {
    expect(durationBound({ durationSeconds: 4 }, 100_000)).toBe(4);
    expect(durationBound({}, 750_000)).toBe(1000); // 6 kbit/s
    // a header that says less than the size allows at MPEG Layer III's 320 kbit/s
    expect(durationBound({ durationSeconds: 0.1, codec: "MPEG 2 Layer 3" }, 400_000)).toBe(10);
    expect(billedSeconds({ durationSeconds: 4 }, 9, 100_000)).toBe(9);
    expect(billedSeconds({ durationSeconds: 4 }, undefined, 100_000)).toBe(4);
    expect(billedSeconds({ durationSeconds: 4 }, 2, 100_000)).toBe(4);
    expect(billedSeconds({}, 9, 100_000)).toBe(9);
    expect(billedSeconds({}, undefined, 75_000)).toBe(100);
    expect(billedSeconds({ durationSeconds: 0.1, codec: "MPEG 1 Layer 3" }, undefined, 400_000)).toBe(10);
    expect(billedSeconds({}, 1e6, 75_000)).toBe(100); // no more than the size allows at 6 kbit/s
  });

  it("prices per minute of audio, fractional minutes included", () => {
    expect(transcriptionPoints(MODEL, 90)).toBe(9);
    expect(transcriptionPoints(MODEL, 2.5)).toBe(0.25);
  });
});

describe("transcription answer", () => {
  it.each<[string, Parameters<typeof answerSeconds>[1], number | undefined]>([
    ['{"text":"hi","usage":{"type":"duration","seconds":3}}', "json", 3],
    ['{"text":"hi","usage":{"type":"tokens","input_tokens":3}}', "json", undefined],
    ['{"task":"transcribe","duration":2.5,"text":"hi"}', "verbose_json", 2.5],
    ["1\n00:00:00,000 --> 00:00:01,200\nhi\n\n2\n00:00:01,200 --> 01:02:03,450\nthere\n", "srt", 3723.45],
    ["WEBVTT\n\n00:00.000 --> 00:02.500\nhi\n", "vtt", 2.5],
    ["hi there\n", "text", undefined],
    ["not json", "json", undefined],
  ])("reads the seconds %j reports", (body, format, seconds) => {
    expect(answerSeconds(body, format)).toBe(seconds);
  });

  it("keeps only the content type, the format's when the upstream gives none", () => {
    expect(transcriptionHeaders({ "content-type": "application/json", server: "uvicorn", connection: "close" }, "json")).toEqual({ "content-type": "application/json" });
    expect(transcriptionHeaders(new Headers(), "srt")).toEqual({ "content-type": "text/plain; charset=utf-8" });
  });
});

describe("multipart body", () => {
  it("writes the fields then the file, with an exact length, and the same bytes on every open()", async () => {
    const path = join(dir, "body.wav");
    await writeFile(path, WAV);
    const body = createMultipartBody(
      [
        ["model", "whisper-large-v3"],
        ["prompt", 'a "quoted"\r\nprompt'],
      ],
      { path, bytes: WAV.length, filename: 'tone "1".wav', mimeType: "audio/wav" },
    );
    const read = async () => Buffer.concat(await body.open().toArray());
    const first = await read();
    expect(first.length).toBe(body.contentLength);
    expect((await read()).equals(first)).toBe(true);
    // a real multipart parser reads it back whole
    const parsed = await new Promise<{ fields: string[][]; file: Buffer; filename: string; type: string }>((resolve, reject) => {
      const out = { fields: [] as string[][], file: Buffer.alloc(0), filename: "", type: "" };
      const parser = Busboy({ headers: { "content-type": body.contentType } });
      parser.on("field", (name, value) => out.fields.push([name, value]));
      parser.on("file", (_n, stream, filename, _e, type) => {
        Object.assign(out, { filename, type });
        void stream.toArray().then((chunks) => (out.file = Buffer.concat(chunks as Buffer[])));
      });
      parser.on("finish", () => setImmediate(() => resolve(out)));
      parser.on("error", reject);
      parser.end(first);
    });
    expect(parsed.fields).toEqual([
      ["model", "whisper-large-v3"],
      ["prompt", 'a "quoted"\r\nprompt'],
    ]);
    expect(parsed).toMatchObject({ filename: "tone %221%22.wav", type: "audio/wav" });
    expect(parsed.file.equals(WAV)).toBe(true);
    await rm(path);
  });
});

describe("transcription through the gateway", () => {
  const f = useFleet();
  /** The upload files of requests in flight. */
  const spooled = () => readdir(f.spoolDir);
  const openai = (key = FLEET_KEY) => new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });

  afterEach(async () => {
    // no temporary file outlives its request
    await vi.waitFor(async () => expect(await spooled()).toEqual([]));
  });

  it("takes the openai SDK's WAV upload: file intact upstream, fields forwarded, billed by the model's 3 s", async () => {
    const res = await openai()
      .audio.transcriptions.create({ file: await toFile(WAV, "tone.wav", { type: "audio/wav" }), model: "whisper-1", language: "en", prompt: "a tone", temperature: 0.2 })
      .withResponse();
    expect(res.data.text).toBe("hello from the tone");
    const got = f.audio[0].transcriptions.at(-1)!;
    expect(got.file).toEqual({ filename: "tone.wav", mimeType: "audio/wav", bytes: WAV.length, sha256: sha(WAV) });
    expect(Object.fromEntries(got.fields)).toEqual({ model: "whisper-large-v3", language: "en", prompt: "a tone", temperature: "0.2" });
    expect(Number(got.headers["content-length"])).toBeGreaterThan(WAV.length);
    expect(got.headers.authorization).toBe("Bearer channel-key-audio-a");
    // the file says 2.5 s, the model (OpenAI's usage, in whole seconds) 3: the larger, at 6 points a minute
    expect(f.rows).toEqual([expect.objectContaining({ appId: "fleet", model: "whisper-large-v3", channel: "audio-a", inputTokens: 3, outputTokens: 0, points: 0.3, status: 200 })]);
  });

  it("passes an MP3's srt answer back as text, after a failing channel got the first attempt", async () => {
    f.audio[0].behave({ status: 503 });
    const before = f.audio[0].transcriptions.length;
    const srt = await openai().audio.transcriptions.create({ file: await toFile(MP3, "tone.mp3", { type: "audio/mpeg" }), model: "whisper-1", response_format: "srt" });
    expect(srt).toContain("00:00:00,000 --> 00:00:02,500\nhello from the tone");
    // both attempts sent the whole file
    expect(f.audio[0].transcriptions.length).toBe(before + 1);
    expect(f.audio[0].transcriptions.at(-1)!.file!.sha256).toBe(sha(MP3));
    expect(f.audio[1].transcriptions.at(-1)!.file!.sha256).toBe(sha(MP3));
    expect(f.rows).toEqual([expect.objectContaining({ channel: "audio-b", status: 200 })]);
    expect(f.rows[0]!.inputTokens).toBeGreaterThanOrEqual(3);
    expect(await f.metrics()).toContain('sluice_upstream_attempts_total{channel="audio-a",outcome="retried"} 1');
  });

  describe("a file whose header lies about its length (a forged Xing frame: 30 s of MP3 saying 0.144 s)", () => {
    const FAKE = withFakeXing(makeMp3({ seconds: 30 }), 4);

    it("is billed the model's 30 s when the model reports them (before: the header's 0.144 s)", async () => {
      f.audio[0].behave({ seconds: 30 });
      await openai().audio.transcriptions.create({ file: await toFile(FAKE, "long.mp3", { type: "audio/mpeg" }), model: "whisper-1" });
      expect(f.rows).toEqual([expect.objectContaining({ inputTokens: 30, points: transcriptionPoints(MODEL, 30) })]);
    });

    it("is billed what its size plays at 320 kbit/s at least when the model reports nothing (before: 0.144 s)", async () => {
      await openai().audio.transcriptions.create({ file: await toFile(FAKE, "long.mp3", { type: "audio/mpeg" }), model: "whisper-1", response_format: "text" });
      const seconds = (FAKE.length * 8) / 320_000; // 6.03 s
      expect(f.rows).toEqual([expect.objectContaining({ inputTokens: Math.ceil(seconds), points: transcriptionPoints(MODEL, seconds) })]);
    });
  });

  it("refuses a budget that cannot pay for the file's minutes with 429 insufficient_quota, calling no model", async () => {
    const before = f.audio[0].transcriptions.length;
    // 0.01 points pay 0.1 s at 6 points a minute
    const err = await openai(TIGHT_KEY)
      .audio.transcriptions.create({ file: await toFile(WAV, "t.wav"), model: "whisper-large-v3" })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 429, code: "insufficient_quota" });
    expect(f.audio[0].transcriptions.length).toBe(before);
    expect(f.rows).toEqual([]);
  });

  it.each([
    ["an empty file", Buffer.alloc(0), "empty_file"],
    ["a text file", Buffer.from("not audio\n".repeat(50)), "invalid_audio"],
  ])("refuses %s with a 400 naming file, calling no model", async (_, bytes, code) => {
    const before = f.audio[0].transcriptions.length;
    const err = await openai()
      .audio.transcriptions.create({ file: await toFile(bytes, "x.wav"), model: "whisper-1" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err).toMatchObject({ status: 400, code, param: "file" });
    expect(f.audio[0].transcriptions.length).toBe(before);
  });

  it("refuses a form with no file, one with a second file, a model the app may not use, and no key", async () => {
    const post = (form: FormData, key: string | null = FLEET_KEY) => fetch(`${f.gw.url}/v1/audio/transcriptions`, { method: "POST", body: form, headers: key ? { authorization: `Bearer ${key}` } : {} });
    const form = new FormData();
    form.set("model", "whisper-1");
    expect((await expectError(await post(form), 400, "invalid_request")).param).toBe("file");
    form.set("file", new Blob([new Uint8Array(WAV)]), "a.wav");
    await expectError(await post(form, LISTED_KEY), 404, "model_not_found");
    await expectError(await post(form, null), 401, "missing_api_key");
    form.set("audio", new Blob([new Uint8Array(WAV)]), "b.wav");
    expect((await expectError(await post(form), 400, "invalid_request")).param).toBe("audio");
  });

  it("stops an upload past server.audioLimitBytes with a 413, having read little more than the limit", async () => {
    const sockets: Socket[] = [];
    f.gw.server.on("connection", (s: Socket) => sockets.push(s));
    const total = 24 * 1024 * 1024;
    const boundary = "----test-boundary";
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
    const req = httpRequest(`${f.gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${FLEET_KEY}`, "content-type": `multipart/form-data; boundary=${boundary}` } });
    req.on("error", () => undefined); // the gateway closes the connection with the upload unfinished
    let sent = 0;
    let answered = false;
    const response = new Promise<{ status: number; body: string }>((resolve) =>
      req.on("response", (res) => {
        answered = true;
        void res.toArray().then((c) => resolve({ status: res.statusCode!, body: Buffer.concat(c).toString() }), () => resolve({ status: res.statusCode!, body: "" }));
      }),
    );
    void (async () => {
      req.write(head);
      const chunk = Buffer.alloc(64 * 1024, 1);
      while (sent < total && !answered && !req.destroyed) {
        sent += chunk.length;
        if (!req.write(chunk)) await Promise.race([once(req, "drain"), once(req, "close")]);
      }
      if (!answered && !req.destroyed) req.end(`\r\n--${boundary}--\r\n`);
    })();
    const { status, body } = await response;
    expect(status).toBe(413);
    expect(JSON.parse(body)).toMatchObject({ error: { code: "file_too_large", param: "file" } });
    const socket = sockets.at(-1)!;
    if (!socket.destroyed) await once(socket, "close");
    expect(socket.bytesRead).toBeLessThan(AUDIO_LIMIT + 512 * 1024);
    expect(sent).toBeLessThan(total); // the client was stopped, not read to the end
    req.destroy();
  });

  it("refuses at once a declared Content-Length far past the limit", async () => {
    const res = await fetch(`${f.gw.url}/v1/audio/transcriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${FLEET_KEY}`, "content-type": "multipart/form-data; boundary=x", "content-length": String(AUDIO_LIMIT + 4 * 1024 * 1024) },
      body: Readable.toWeb(Readable.from([Buffer.alloc(10)])) as ReadableStream,
      duplex: "half",
    } as RequestInit).catch((e: unknown) => e as Error);
    // the answer may beat the body: either the 413 or a connection closed on the unsent body
    if (res instanceof Response) await expectError(res, 413, "file_too_large");
  });

  it("refuses an upload without a key before reading it: the 401 comes while the body is still open, nothing spooled", async () => {
    const boundary = "b";
    const req = httpRequest(`${f.gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { "content-type": `multipart/form-data; boundary=${boundary}` } });
    req.on("error", () => undefined);
    const response = once(req, "response") as Promise<[import("node:http").IncomingMessage]>;
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
    req.write(WAV.subarray(0, 60_000));
    const [res] = await response;
    expect(res.statusCode).toBe(401);
    expect(JSON.parse(Buffer.concat(await res.toArray()).toString()).error.code).toBe("missing_api_key");
    expect(await spooled()).toEqual([]);
    req.destroy();
  });

  it("removes the file when the client goes away mid-upload", async () => {
    const boundary = "b";
    const req = httpRequest(`${f.gw.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${FLEET_KEY}`, "content-type": `multipart/form-data; boundary=${boundary}` } });
    req.on("error", () => undefined);
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
    req.write(WAV.subarray(0, 60_000));
    await new Promise<void>((resolve) => req.write(WAV.subarray(60_000, 80_000), () => resolve()));
    await vi.waitFor(async () => expect((await spooled()).length).toBe(1));
    req.destroy();
  });

  it("removes the file when the client goes away while the model works, its usage row saying so", async () => {
    f.audio[0].behave({ hang: true });
    const arrived = once(f.audio[0].events, "transcription");
    const abort = new AbortController();
    const call = openai().audio.transcriptions.create({ file: await toFile(WAV, "t.wav"), model: "whisper-1" }, { signal: abort.signal });
    call.catch(() => undefined);
    await arrived;
    abort.abort();
    await expect(call).rejects.toThrow();
    await vi.waitFor(() => expect(f.rows).toEqual([expect.objectContaining({ channel: "audio-a", status: 499, points: 0 })]));
  });

  it("answers 500 upload_storage_failed, not the client's fault, when the spool directory cannot take the file", async () => {
    const broken = await startGateway(fleetConfig({ ...f, spoolDir: join(f.spoolDir, "missing", "dir") }));
    try {
      const form = new FormData();
      form.set("model", "whisper-1");
      form.set("file", new Blob([new Uint8Array(WAV)]), "a.wav");
      const res = await fetch(`${broken.url}/v1/audio/transcriptions`, { method: "POST", body: form, headers: { authorization: `Bearer ${FLEET_KEY}` } });
      expect(await expectError(res, 500, "upload_storage_failed")).toMatchObject({ type: "server_error" });
    } finally {
      await broken.close();
    }
  });

  it('counts requests, points and latency under route="transcription"', async () => {
    await openai().audio.transcriptions.create({ file: await toFile(WAV, "t.wav"), model: "sensevoice", response_format: "text" });
    const metrics = await f.metrics();
    expect(metrics).toContain('sluice_requests_total{route="transcription",model="sensevoice",app="fleet",status="200"} 1');
    // 2.5 s at 1 point a minute
    expect(metrics).toContain(`sluice_route_points_total{route="transcription",model="sensevoice",app="fleet"} ${transcriptionPoints({ ...MODEL, charsPointsPrice: 1 }, 2.5)}`);
    expect(metrics).toContain('sluice_request_duration_seconds_count{route="transcription"} 1');
  });
});
