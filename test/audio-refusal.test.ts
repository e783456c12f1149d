// Crafted audio is refused quickly (issue 36, item 12; docs/fleet.md#transcription): a file whose
// first bytes are no audio container's is refused before music-metadata reads it, and bytes crafted
// to pass that look (an ID3 tag before 0xFF bytes) within the parser's smaller budget. Through the
// gateway over real sockets; a refusal's time measured, so this file runs in the "alone" group
// (vitest.config.ts).
import { describe, expect, it } from "vitest";
import { expectError } from "./support/fixtures.js";
import { AUDIO_LIMIT, FLEET_KEY, useFleet } from "./support/fleet.js";
import { makeWav } from "./support/tone.js";

const f = useFleet();
const ID3 = Buffer.from([0x49, 0x44, 0x33, 3, 0, 0, 0, 0, 0, 0]); // an empty ID3v2.3 tag

async function transcribe(file: Buffer): Promise<{ res: Response; ms: number }> {
  const form = new FormData();
  form.set("model", "whisper-1");
  form.set("file", new Blob([new Uint8Array(file)]), "crafted.mp3");
  const started = performance.now();
  const res = await fetch(`${f.gw.url}/v1/audio/transcriptions`, { method: "POST", body: form, headers: { authorization: `Bearer ${FLEET_KEY}` } });
  await res.clone().arrayBuffer();
  return { res, ms: performance.now() - started };
}

describe("a crafted audio file", () => {
  it("of 256 KiB of 0xFF is refused 400 invalid_audio within 300 ms, calling no model (before: after 0.5–0.6 s of parsing)", async () => {
    // a parser at work already, as on a gateway that has served before
    expect((await transcribe(makeWav({ seconds: 1 }))).res.status).toBe(200);
    const before = f.audio[0].transcriptions.length;
    const { res, ms } = await transcribe(Buffer.alloc(AUDIO_LIMIT, 0xff));
    const error = await expectError(res, 400, "invalid_audio");
    expect(error).toMatchObject({ param: "file", message: "file: the file is not audio the gateway can read (send mp3, mp4, m4a, wav, webm, ogg or flac)." });
    expect(ms, `refused after ${ms.toFixed(0)} ms`).toBeLessThan(300);
    expect(f.audio[0].transcriptions.length).toBe(before);
  });

  it("that passes for audio at its start is refused within the parser's budget of 0.25 s (before: 0.5 s)", async () => {
    const { res } = await transcribe(Buffer.concat([ID3, Buffer.alloc(AUDIO_LIMIT - 1024, 0xff)]));
    const error = await expectError(res, 400, "invalid_audio");
    expect(error.message).toBe("file: the file could not be read as audio within 0.25 s (send mp3, mp4, m4a, wav, webm, ogg or flac).");
  });
});
