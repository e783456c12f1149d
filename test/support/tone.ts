// Real short audio files for tests: a sine tone as 16-bit mono PCM in a WAV file (RIFF header
// written here: 44 bytes of a fixed layout), or encoded as MP3 by lamejs (pure JS, LGPL, test only).
import { Mp3Encoder } from "@breezystack/lamejs";

export interface ToneOptions {
  seconds: number;
  sampleRate?: number;
  frequency?: number;
}

/** The tone's samples. */
export function toneSamples({ seconds, sampleRate = 16_000, frequency = 440 }: ToneOptions): Int16Array {
  const n = Math.round(seconds * sampleRate);
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) pcm[i] = Math.round(Math.sin((2 * Math.PI * frequency * i) / sampleRate) * 12_000);
  return pcm;
}

/** A WAV file (PCM, 16-bit, mono) holding the tone. */
export function makeWav(opts: ToneOptions): Buffer {
  const sampleRate = opts.sampleRate ?? 16_000;
  const pcm = toneSamples(opts);
  const data = pcm.length * 2;
  const header = Buffer.alloc(44);
  header.write("RIFF", 0);
  header.writeUInt32LE(36 + data, 4);
  header.write("WAVE", 8);
  header.write("fmt ", 12);
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28); // bytes per second
  header.writeUInt16LE(2, 32); // bytes per frame
  header.writeUInt16LE(16, 34); // bits per sample
  header.write("data", 36);
  header.writeUInt32LE(data, 40);
  return Buffer.concat([header, Buffer.from(pcm.buffer, pcm.byteOffset, data)]);
}

/** An MP3 file (mono, 64 kbps CBR) holding the tone. Its decoded length is a little longer than
 *  `seconds`: the encoder pads the last frame. */
export function makeMp3(opts: ToneOptions): Buffer {
  const sampleRate = opts.sampleRate ?? 16_000;
  const pcm = toneSamples(opts);
  const encoder = new Mp3Encoder(1, sampleRate, 64);
  const parts: Buffer[] = [];
  const FRAME = 1152;
  for (let i = 0; i < pcm.length; i += FRAME) {
    const out = encoder.encodeBuffer(pcm.subarray(i, i + FRAME));
    if (out.length > 0) parts.push(Buffer.from(out));
  }
  parts.push(Buffer.from(encoder.flush()));
  return Buffer.concat(parts);
}

/** `mp3` (MPEG-2 Layer III mono, as makeMp3 writes it) behind a forged Xing frame claiming only
 *  `frames` frames: a header that says the audio is a fraction of a second long, whatever follows. */
export function withFakeXing(mp3: Buffer, frames: number): Buffer {
  const frame = Buffer.alloc(288); // 72 × 64 kbit/s ÷ 16 kHz
  mp3.copy(frame, 0, 0, 4); // the real frames' header
  frame.write("Xing", 4 + 9); // after the 9 bytes of mono MPEG-2 side information
  frame.writeUInt32BE(0b11, 17); // flags: frame count and stream size present
  frame.writeUInt32BE(frames, 21);
  frame.writeUInt32BE(frame.length + mp3.length, 25);
  return Buffer.concat([frame, mp3]);
}
