// Speech (docs/fleet.md#speech): the request checked field by field, the voice against the model's
// list, characters and points; the client's headers made from the upstream's. Over real sockets,
// through a small server built of these functions: the first audio bytes reach the client before the
// upstream has made the last, and the openai SDK's audio.speech.create gets real audio, bytes intact.
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseFile } from "music-metadata";
import OpenAI from "openai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { speechPoints } from "../src/audio/points.js";
import { speechHeaders } from "../src/audio/speech-headers.js";
import { SPEECH_PATH, checkVoice, parseSpeechRequest, speechCharacters, speechUpstreamBody } from "../src/audio/speech-request.js";
import type { AudioSpeechModelConfig } from "../src/config/schema.js";
import { GatewayError } from "../src/http/errors.js";
import { SPEECH_MP3, SPEECH_WAV, startAudioUpstream, type AudioUpstream } from "./support/audio-upstream.js";

const MODEL: AudioSpeechModelConfig = {
  model: "cosyvoice",
  name: "CosyVoice",
  charsPointsPrice: 3,
  voices: [
    { label: "Alloy", value: "alloy" },
    { label: "Nova", value: "nova" },
  ],
};

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("speech request", () => {
  it("keeps OpenAI's other fields and sends the configured model name", () => {
    const req = parseSpeechRequest({ model: "tts", input: "Hi", voice: "alloy", response_format: "wav", speed: 1.5, instructions: "calm" });
    expect(speechUpstreamBody(req, MODEL)).toEqual({ model: "cosyvoice", input: "Hi", voice: "alloy", response_format: "wav", speed: 1.5, instructions: "calm" });
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

/** A server made of the speech functions, relaying to `upstream`: what the pipeline will do. */
async function startSpeechRelay(upstream: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      try {
        const parsed = parseSpeechRequest(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        checkVoice(parsed, MODEL);
        const up = await request(`${upstream}${SPEECH_PATH}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(speechUpstreamBody(parsed, MODEL)) });
        res.writeHead(up.statusCode, speechHeaders(up.headers, parsed.response_format));
        await pipeline(up.body, res);
      } catch (err) {
        const e = err instanceof GatewayError ? err : new GatewayError(502, "upstream_error", "relay failed");
        if (!res.headersSent) res.writeHead(e.status, { "content-type": "application/json" }).end(JSON.stringify(e.toBody()));
        else res.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("speech over real sockets", () => {
  let up: AudioUpstream;
  let relay: { url: string; server: Server };
  beforeAll(async () => {
    up = await startAudioUpstream();
    relay = await startSpeechRelay(up.url);
  });
  afterAll(async () => {
    relay.server.close();
    await up.close();
  });

  it("streams: the client holds the first bytes while the upstream has not made the rest", async () => {
    up.behave({ hold: true, chunks: 4 });
    const res = await request(`${relay.url}/v1/audio/speech`, { method: "POST", body: JSON.stringify({ model: "tts", input: "Hello there", voice: "nova", response_format: "wav" }) });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("audio/wav");
    const body = Readable.from(res.body);
    const [first] = (await once(body, "data")) as [Buffer];
    await up.firstPieceSent(); // the upstream is waiting to make the rest
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(SPEECH_WAV.length);
    expect(SPEECH_WAV.subarray(0, first.length).equals(first)).toBe(true);
    body.pause();
    up.release();
    const rest: Buffer[] = [first];
    body.on("data", (c: Buffer) => rest.push(c));
    body.resume();
    await once(body, "end");
    expect(Buffer.concat(rest).equals(SPEECH_WAV)).toBe(true);
    up.behave({ hold: false });
  });

  it("gives the openai SDK's audio.speech.create real audio, streamed to a file, bytes intact", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sluice-speech-"));
    try {
      const openai = new OpenAI({ apiKey: "sk-app", baseURL: `${relay.url}/v1`, maxRetries: 0 });
      const response = await openai.audio.speech.create({ model: "tts", input: "One second of tone.", voice: "alloy" });
      expect(response.headers.get("content-type")).toBe("audio/mpeg");
      const file = join(dir, "speech.mp3");
      await pipeline(Readable.fromWeb(response.body as import("node:stream/web").ReadableStream), createWriteStream(file));
      expect((await readFile(file)).equals(SPEECH_MP3)).toBe(true);
      const meta = await parseFile(file, { duration: true });
      expect(meta.format.duration).toBeGreaterThan(0.9);
      expect(up.speech.at(-1)!.body).toEqual({ model: "cosyvoice", input: "One second of tone.", voice: "alloy" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses an unknown voice before any upstream call", async () => {
    const before = up.speech.length;
    const res = await request(`${relay.url}/v1/audio/speech`, { method: "POST", body: JSON.stringify({ model: "tts", input: "Hi", voice: "onyx" }) });
    expect(res.statusCode).toBe(400);
    expect(((await res.body.json()) as { error: { param: string } }).error.param).toBe("voice");
    expect(up.speech.length).toBe(before);
  });
});
