// What each channel was sent (docs/routing.md#prefix): a request's prefix — its prompt as the channel
// receives it, in UTF-8 bytes — cut into CHUNK_BYTES chunks, each named by a running hash of every
// byte before its end (so chunk i's name covers chunks 0..i and a match is always a leading run),
// and per channel the chunks it was sent, least recently used evicted past what its engine can hold.
// The hash is a 32-bit multiply-xorshift over the bytes, four at a time, not a cryptographic one:
// a false match costs a routing choice, never an answer, and the index is per instance.
import { LRUCache } from "lru-cache";

/** 256 tokens of 4 bytes: the unit of a match (docs/routing.md#prefix) */
export const CHUNK_BYTES = 1024;
export const BYTES_PER_TOKEN = 4;
/** the most chunks one channel's index holds, whatever its engine says (about 22 MB, 64M tokens) */
export const MAX_CHUNKS = 262_144;
/** the most bytes of a prompt hashed (64K tokens): a longer prompt is matched on its start, which
 *  tells apps and sessions apart, and its cost per request is bounded (docs/routing.md#prefix) */
export const MAX_PREFIX_BYTES = 256 * 1024;
/** sessions remembered with the channel they went to (docs/routing.md#prefix) */
const MAX_SESSIONS = 65_536;
const SESSION_TTL_MS = 30 * 60_000;

/** A request's prefix as bytes: its parts in order (a model, role markers, texts). */
export type PrefixParts = ReadonlyArray<string | Uint8Array>;

/** The chained hash of each full chunk of the parts, as numbers (chunk index × 2³² + hash). Four
 *  lanes of words, each a multiply-xor chain, are folded into the chain at each chunk's end: four
 *  independent chains run about three times as fast as one (docs/performance.md#routing-by-prefix). */
export function hashPrefix(parts: PrefixParts): number[] {
  const bytes = joinParts(parts);
  const w = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
  const perChunk = CHUNK_BYTES >>> 2;
  const out: number[] = [];
  let chain = 0x811c9dc5;
  for (let at = 0; at + perChunk <= w.length; at += perChunk) {
    let a = 0x9e3779b1;
    let b = 0x85ebca77;
    let c = 0xc2b2ae3d;
    let d = 0x27d4eb2f;
    for (let i = at, end = at + perChunk; i < end; i += 4) {
      a = Math.imul(a ^ w[i]!, 0x01000193);
      b = Math.imul(b ^ w[i + 1]!, 0x01000193);
      c = Math.imul(c ^ w[i + 2]!, 0x01000193);
      d = Math.imul(d ^ w[i + 3]!, 0x01000193);
      a ^= a >>> 15;
      b ^= b >>> 15;
      c ^= c >>> 15;
      d ^= d >>> 15;
    }
    chain = fold(fold(fold(fold(chain, a), b), c), d);
    out.push(out.length * 0x1_0000_0000 + (chain >>> 0));
  }
  return out;
}

const fold = (h: number, v: number): number => {
  const x = Math.imul(h ^ v, 0x2c1b3c6d);
  return x ^ (x >>> 13);
};

/** The parts' UTF-8 bytes in one buffer of its own (word-aligned), at most MAX_PREFIX_BYTES, cut to
 *  whole chunks (a character the cut falls in is left out, its bytes zeros). */
function joinParts(parts: PrefixParts): Uint8Array {
  let total = 0;
  for (const p of parts) {
    if (total >= MAX_PREFIX_BYTES) break;
    // a string's first MAX_PREFIX_BYTES units hold at least as many bytes: the rest is never read
    total += typeof p === "string" ? Buffer.byteLength(p.length > MAX_PREFIX_BYTES ? p.slice(0, MAX_PREFIX_BYTES) : p) : p.length;
  }
  total = Math.min(total, MAX_PREFIX_BYTES);
  const out = Buffer.allocUnsafeSlow(total - (total % CHUNK_BYTES));
  let at = 0;
  for (const p of parts) {
    if (at >= out.length) break;
    at += typeof p === "string" ? out.write(p, at) : Buffer.from(p.buffer, p.byteOffset, Math.min(p.length, out.length - at)).copy(out, at);
  }
  // a string's character cut at the end is not written: its bytes are zeros, not what the memory held
  return out.fill(0, at);
}

/** Tokens of engine cache → chunks of the index, within [1, MAX_CHUNKS]. */
export const chunksFor = (cacheTokens: number): number => Math.max(1, Math.min(MAX_CHUNKS, Math.floor((cacheTokens * BYTES_PER_TOKEN) / CHUNK_BYTES)));

/** One channel's chunks, least recently used evicted past `max`. */
export class PrefixIndex {
  #chunks: LRUCache<number, true>;

  constructor(readonly max: number) {
    this.#chunks = new LRUCache({ max });
  }

  get size(): number {
    return this.#chunks.size;
  }

  /** How many leading chunks of `hashes` the channel holds (recency untouched: a look is not a use). */
  match(hashes: readonly number[]): number {
    let n = 0;
    while (n < hashes.length && this.#chunks.has(hashes[n]!)) n++;
    return n;
  }

  /** The chunks were sent to the channel: the head set last, so a prompt's tail is evicted first, as an engine does. */
  record(hashes: readonly number[]): void {
    for (let i = hashes.length - 1; i >= 0; i--) this.#chunks.set(hashes[i]!, true);
  }

  /** The same entries (the most recent ones that fit) under another bound. */
  resized(max: number): PrefixIndex {
    const next = new PrefixIndex(max);
    // rkeys(): least recent first, so the most recent end up the most recent again
    for (const hash of this.#chunks.rkeys()) next.#chunks.set(hash, true);
    return next;
  }
}

/** A channel's index is resized at most this often: a resize copies its entries (~150 ms at the
 *  cap), and an engine's metrics may say another cache size at every scrape. */
export const RESIZE_MS = 60_000;

/** Every channel's index, and the channel each session went to: kept across reloads by channel name. */
export class PrefixIndexes {
  readonly #byChannel = new Map<string, { index: PrefixIndex; at: number }>();
  readonly sessions = new LRUCache<string, string>({ max: MAX_SESSIONS, ttl: SESSION_TTL_MS });

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** The channel's index, bounded by `cacheTokens` (resized when that changed, at most once a RESIZE_MS
   *  after its first resize). */
  of(channel: string, cacheTokens: number): PrefixIndex {
    const max = chunksFor(cacheTokens);
    const kept = this.#byChannel.get(channel);
    if (kept && (kept.index.max === max || this.now() - kept.at < RESIZE_MS)) return kept.index;
    // a new index is no resize: the first size an engine's metrics tell replaces the config's at once
    const index = kept ? kept.index.resized(max) : new PrefixIndex(max);
    this.#byChannel.set(channel, { index, at: kept ? this.now() : -Infinity });
    return index;
  }

  /** Only these channels are kept (a reload removed the others). */
  keep(channels: ReadonlySet<string>): void {
    for (const name of [...this.#byChannel.keys()]) if (!channels.has(name)) this.#byChannel.delete(name);
  }

  entries(channel: string): number {
    return this.#byChannel.get(channel)?.index.size ?? 0;
  }
}
