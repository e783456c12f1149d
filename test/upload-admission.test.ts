// A transcription upload is judged before its file is stored (docs/fleet.md#transcription; issue 27
// item 4): the caller, QPM and a model named before the file refuse it while the client is still
// sending, with nothing in the spool; uploads in flight are bounded per key and overall; a starting
// gateway removes the uploads a crashed one left; and the whole upload gets `bodyTimeoutMs`, not
// that plus `headersTimeoutMs`. Over real sockets, the upload written by hand so that the test holds
// its body open.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AUDIO_LIMIT, FLEET_GLOBAL_KEY, FLEET_KEY, LISTED_KEY, fleetConfig, useFleet } from "./support/fleet.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { makeWav } from "./support/tone.js";

const WAV = makeWav({ seconds: 2.5 });
/** A key of the fleet app allowed one request a minute. */
const QPM_KEY = "sk-fleet-qpm-key-0009";
/** A second key of the fleet app. */
const OTHER_KEY = "sk-fleet-other-key-0010";
const BOUNDARY = "upload-admission";

interface OpenUpload {
  req: ClientRequest;
  /** the answer, with its body read */
  answer: Promise<{ status: number; headers: IncomingMessage["headers"]; body: { error: { code: string } } }>;
}

/** Starts an upload — `fields` before the file, then the file's first 60 KB — and holds it open. */
function openUpload(url: string, key: string, fields: Array<[string, string]> = []): OpenUpload {
  const req = httpRequest(`${url}/v1/audio/transcriptions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
  });
  req.on("error", () => undefined); // the gateway may close the connection on the unsent rest
  const answer = new Promise<Awaited<OpenUpload["answer"]>>((resolve, reject) => {
    req.on("response", (res) => {
      void res.toArray().then((chunks) => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString() || "{}") }), reject);
    });
  });
  for (const [name, value] of fields) req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
  req.write(WAV.subarray(0, 60_000));
  return { req, answer };
}

/** Sends the rest of an open upload's file and ends it. */
function finishUpload(upload: OpenUpload, fields: Array<[string, string]> = [["model", "whisper-1"]]): void {
  upload.req.write(WAV.subarray(60_000));
  upload.req.write("\r\n");
  for (const [name, value] of fields) upload.req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  upload.req.end(`--${BOUNDARY}--\r\n`);
}

describe("an upload judged before its file is stored", () => {
  const f = useFleet();
  let gw: StartedGateway | undefined;
  let spool: string;

  afterEach(async () => {
    await gw?.close();
    gw = undefined;
    if (spool) await rm(spool, { recursive: true, force: true });
  });

  /** A gateway of the fleet with its own spool and `server` settings, and two more keys of the fleet
   *  app; a reload swaps in the same config. */
  async function start(server: Record<string, unknown> = {}): Promise<StartedGateway> {
    spool = await mkdtemp(join(tmpdir(), "sluice-admission-"));
    const config = fleetConfig({ ...f, spoolDir: spool }, { server: { audioLimitBytes: AUDIO_LIMIT, audioSpoolDir: spool, ...server } }) as { apiKeys: unknown[] };
    config.apiKeys.push({ name: "qpm-key", kind: "app", appId: "fleet", key: QPM_KEY, qpm: 1 }, { name: "other-key", kind: "app", appId: "fleet", key: OTHER_KEY });
    gw = await startGateway(config, { loadConfig: () => gw!.config });
    return gw;
  }
  const spooled = () => readdir(spool);

  it("refuses a key over its QPM with 429 while the file is still arriving, nothing spooled (before: each upload spooled whole, then 429)", async () => {
    const { url } = await start();
    const openai = new OpenAI({ apiKey: QPM_KEY, baseURL: `${url}/v1`, maxRetries: 0 });
    await openai.audio.transcriptions.create({ file: await toFile(WAV, "t.wav"), model: "whisper-1" });
    // the file first, as the openai SDK for Node sends it: the key is judged all the same
    const upload = openUpload(url, QPM_KEY);
    const { status, headers, body } = await upload.answer;
    expect(status).toBe(429);
    expect(body.error.code).toBe("rate_limit_exceeded");
    expect(headers.connection).toBe("close");
    expect(await spooled()).toEqual([]);
    upload.req.destroy();
  });

  it("refuses a global key with 403 and a model the app may not use with 404 before the file is written (before: spooled whole first)", async () => {
    const { url } = await start();
    const global = openUpload(url, FLEET_GLOBAL_KEY);
    expect(await global.answer).toMatchObject({ status: 403, body: { error: { code: "app_key_required" } } });
    const model = openUpload(url, LISTED_KEY, [["model", "whisper-1"]]);
    expect(await model.answer).toMatchObject({ status: 404, body: { error: { code: "model_not_found" } } });
    expect(await spooled()).toEqual([]);
    global.req.destroy();
    model.req.destroy();
  });

  it("judges a model named after the file once the file has arrived", async () => {
    const { url } = await start();
    const upload = openUpload(url, LISTED_KEY);
    await vi.waitFor(async () => expect((await spooled()).length).toBe(1));
    finishUpload(upload);
    expect(await upload.answer).toMatchObject({ status: 404, body: { error: { code: "model_not_found" } } });
    await vi.waitFor(async () => expect(await spooled()).toEqual([]));
  });

  it("bounds uploads in flight per key (429 too_many_uploads) and overall (503 uploads_busy), a slot freed when its request ends", async () => {
    const { url } = await start({ audioMaxUploadsPerKey: 1, audioMaxUploads: 2 });
    const first = openUpload(url, FLEET_KEY, [["model", "whisper-1"]]);
    await vi.waitFor(async () => expect((await spooled()).length).toBe(1));
    const again = openUpload(url, FLEET_KEY, [["model", "whisper-1"]]);
    expect(await again.answer).toMatchObject({ status: 429, headers: { "retry-after": "1" }, body: { error: { code: "too_many_uploads" } } });
    const other = openUpload(url, OTHER_KEY, [["model", "whisper-1"]]);
    await vi.waitFor(async () => expect((await spooled()).length).toBe(2));
    const third = openUpload(url, QPM_KEY, [["model", "whisper-1"]]);
    expect(await third.answer).toMatchObject({ status: 503, headers: { "retry-after": "1" }, body: { error: { code: "uploads_busy" } } });
    expect((await spooled()).length).toBe(2);
    finishUpload(first, []);
    finishUpload(other, []);
    expect((await first.answer).status).toBe(200);
    expect((await other.answer).status).toBe(200);
    // the slots are free again
    const later = new OpenAI({ apiKey: FLEET_KEY, baseURL: `${url}/v1`, maxRetries: 0 });
    await later.audio.transcriptions.create({ file: await toFile(WAV, "t.wav"), model: "whisper-1" });
    for (const u of [again, third]) u.req.destroy();
  });

  it("keeps counting the uploads in flight across a reload (before the count lived in the runtime a reload replaces)", async () => {
    const { url } = await start({ audioMaxUploadsPerKey: 1 });
    const first = openUpload(url, FLEET_KEY, [["model", "whisper-1"]]);
    await vi.waitFor(async () => expect((await spooled()).length).toBe(1));
    expect(await gw!.gateway.reload()).toEqual({ ok: true });
    const again = openUpload(url, FLEET_KEY, [["model", "whisper-1"]]);
    expect(await again.answer).toMatchObject({ status: 429, body: { error: { code: "too_many_uploads" } } });
    finishUpload(first, []);
    expect((await first.answer).status).toBe(200);
    again.req.destroy();
  });

  it("answers 408 once bodyTimeoutMs has passed on a trickled upload, not after headersTimeoutMs more (before: 40.8 s for a 30 s bodyTimeoutMs)", async () => {
    const { url } = await start({ bodyTimeoutMs: 1_000, headersTimeoutMs: 30_000 });
    const started = performance.now();
    const upload = openUpload(url, FLEET_KEY, [["model", "whisper-1"]]);
    const { status, headers, body } = await upload.answer;
    expect(status).toBe(408);
    expect(body.error.code).toBe("request_timeout");
    expect(headers.connection).toBe("close");
    // Node's own request timeout would have come after 31 s
    expect(performance.now() - started).toBeLessThan(15_000);
    await vi.waitFor(async () => expect(await spooled()).toEqual([]));
    upload.req.destroy();
  });

  it("removes the uploads of processes that are gone, and keeps those of a process still running", async () => {
    const spool = await mkdtemp(join(tmpdir(), "sluice-sweep-"));
    try {
      const gone = spawn(process.execPath, ["-e", ""]);
      await once(gone, "exit");
      const left = [`sluice-audio-${gone.pid}-1700000000000-aaaa`, `sluice-audio-${process.pid}-1-bbbb`, "sluice-audio-0b7c3d1e-cccc"];
      const kept = [`sluice-audio-${process.ppid}-1700000000000-dddd`, "notes.txt"];
      for (const name of [...left, ...kept]) await writeFile(join(spool, name), "x");
      const gw = await startGateway(fleetConfig({ ...f, spoolDir: spool }));
      try {
        await vi.waitFor(async () => expect((await readdir(spool)).sort()).toEqual([...kept].sort()));
      } finally {
        await gw.close();
      }
    } finally {
      await rm(spool, { recursive: true, force: true });
    }
  });
});
