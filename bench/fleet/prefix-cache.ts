// The simulated engine's prefix cache (docs/performance.md#the-fleet-simulator), as vLLM's automatic
// prefix caching keeps it: the prompt cut into blocks of `blockSize` tokens, each full block named
// by a hash of its tokens chained to its parent's (so a block matches only under the same prefix),
// free blocks evicted least recently used first once the cache holds `capacity` blocks — a
// sequence's tail before its head, as vLLM frees a request's blocks in reverse order.
import { createHash } from "node:crypto";

/** A token is 4 characters of the rendered prompt: cheap, and a shared text prefix is a shared token prefix. */
export const CHARS_PER_TOKEN = 4;

export const tokensOf = (text: string): number => Math.ceil(text.length / CHARS_PER_TOKEN);

/** The hash of each full block of `text`, in order (the chain: block k's hash covers blocks 0..k). */
export function blockHashes(text: string, blockSize: number): string[] {
  const chars = blockSize * CHARS_PER_TOKEN;
  const hashes: string[] = [];
  let parent = "";
  for (let at = 0; at + chars <= text.length; at += chars) {
    parent = createHash("sha1").update(parent).update(text.slice(at, at + chars)).digest("base64");
    hashes.push(parent);
  }
  return hashes;
}

export class PrefixCache {
  /** cached block hashes, least recently used first (a Map keeps insertion order) */
  readonly #blocks = new Map<string, true>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.#blocks.size;
  }

  /** How many leading blocks of `hashes` are cached (each hit becomes the most recently used). */
  match(hashes: readonly string[]): number {
    let hits = 0;
    while (hits < hashes.length && this.#blocks.has(hashes[hits]!)) hits++;
    this.#touch(hashes.slice(0, hits));
    return hits;
  }

  /** Keeps the blocks of a prefilled prompt; evicts the least recently used past `room` blocks
   *  (the capacity less the blocks running sequences hold). */
  insert(hashes: readonly string[], held: number): void {
    this.#touch(hashes);
    const room = Math.max(0, this.capacity - held);
    for (const oldest of this.#blocks.keys()) {
      if (this.#blocks.size <= room) break;
      this.#blocks.delete(oldest);
    }
  }

  /** Most recently used: the head of the prefix last, so the tail is evicted first. */
  #touch(hashes: readonly string[]): void {
    for (let i = hashes.length - 1; i >= 0; i--) {
      this.#blocks.delete(hashes[i]!);
      this.#blocks.set(hashes[i]!, true);
    }
  }
}
