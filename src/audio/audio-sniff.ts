// The first look at an upload (docs/fleet.md#transcription): do its first bytes open an audio
// container? Read from the spooled file before music-metadata runs, on the event loop (16 bytes, a
// few comparisons), so a file that is no audio — 256 KiB of 0xFF, which music-metadata would read
// as an MPEG frame sync at every byte — is refused at once, without a parser's budget.
import { open } from "node:fs/promises";

const HEAD_BYTES = 16;

/** Containers known by a tag at the file's start (at `at`), as music-metadata reads them. */
const TAGS: Array<[at: number, tag: string]> = [
  [0, "ID3"], // an ID3v2 tag before MPEG, AAC or FLAC audio
  [0, "fLaC"],
  [0, "OggS"], // Ogg: Opus, Vorbis, Speex, FLAC
  [0, "\x1a\x45\xdf\xa3"], // EBML: WebM, Matroska
  [4, "ftyp"], // ISO media: mp4, m4a, 3gp, mov
  [4, "moov"], // QuickTime without a ftyp box
  [4, "mdat"],
  [4, "free"],
  [4, "wide"],
  [0, "caff"],
  [0, "#!AMR"],
  [0, "\x30\x26\xb2\x75\x8e\x66\xcf\x11"], // ASF: WMA
];
/** RIFF-like containers: a tag at 0 and the form at 8. */
const FORMS: Array<[tag: string, forms: string[]]> = [
  ["RIFF", ["WAVE"]],
  ["RF64", ["WAVE"]],
  ["BW64", ["WAVE"]],
  ["FORM", ["AIFF", "AIFC"]],
];

/** Whether the file at `path` starts as audio music-metadata can read. */
export async function looksLikeAudio(path: string): Promise<boolean> {
  const file = await open(path, "r");
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await file.read(head, 0, HEAD_BYTES, 0);
    return opensAudio(head.subarray(0, bytesRead));
  } finally {
    await file.close();
  }
}

/** Whether `head`, a file's first bytes, opens an audio container or an MPEG or ADTS frame. */
export function opensAudio(head: Buffer): boolean {
  const has = (at: number, tag: string) => head.length >= at + tag.length && head.toString("latin1", at, at + tag.length) === tag;
  if (TAGS.some(([at, tag]) => has(at, tag))) return true;
  if (FORMS.some(([tag, forms]) => has(0, tag) && forms.some((form) => has(8, form)))) return true;
  return mpegFrame(head) || adtsFrame(head);
}

/** An MPEG audio frame header (Layers I–III): the sync, and a version, layer, bitrate and sample
 *  rate that exist (0xFF bytes name the bitrate "bad" and a reserved sample rate). */
function mpegFrame(head: Buffer): boolean {
  if (head.length < 4 || head[0] !== 0xff || (head[1]! & 0xe0) !== 0xe0) return false;
  const version = (head[1]! >> 3) & 0b11;
  const layer = (head[1]! >> 1) & 0b11;
  const bitrate = head[2]! >> 4;
  const sampleRate = (head[2]! >> 2) & 0b11;
  return version !== 0b01 && layer !== 0b00 && bitrate !== 0b1111 && sampleRate !== 0b11;
}

/** An ADTS (AAC) frame header: the 12-bit sync, layer 0, and a sampling frequency index that exists. */
function adtsFrame(head: Buffer): boolean {
  if (head.length < 4 || head[0] !== 0xff || (head[1]! & 0xf6) !== 0xf0) return false;
  return ((head[2]! >> 2) & 0b1111) < 13;
}
