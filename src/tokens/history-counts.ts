// Exact token counts of conversation messages, kept between a chat's requests so that a chatId
// request whose history has to be counted counts only what is new. A count is kept under its chat
// (app and chatId), the tokenizer and a hash of the counted text: a new round is a new key, and two
// chats never share one. Bounded by bytes, least recently used first out: every key holds a digest
// and a tokenizer's name, so the bytes bound entries too (under 190,000) without a `max`, for which
// lru-cache would allocate storage at start (docs/performance.md#start-up).
import { hash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { TokenizerName } from "./counter.js";
import type { KnownCounts } from "./tally.js";

const MAX_BYTES = 32 * 1024 * 1024;
// a count, the entry and the map's own overhead, beside the key's characters
const ENTRY_BYTES = 64;

export interface HistoryCounts {
  /** the counts of one chat's messages under one tokenizer */
  forChat(appId: string, chatId: string, tokenizer: TokenizerName): KnownCounts;
  /** the counts of one caller's messages (an agent resends its whole conversation every turn) */
  forCaller(scope: string, tokenizer: TokenizerName): KnownCounts;
}

export function createHistoryCounts(opts: { maxBytes?: number } = {}): HistoryCounts {
  const counts = new LRUCache<string, number>({
    maxSize: opts.maxBytes ?? MAX_BYTES,
    sizeCalculation: (_, key) => ENTRY_BYTES + key.length * 2,
  });
  const under = (prefix: string): KnownCounts => ({
    keyOf: (text) => prefix + hash("sha256", text, "base64url"),
    get: (key) => counts.get(key),
    set: (key, tokens) => void counts.set(key, tokens),
  });
  return {
    // the ids' lengths first: no pair of ids can spell another pair's prefix
    forChat: (appId, chatId, tokenizer) => under(`${appId.length}:${appId}${chatId.length}:${chatId}${tokenizer}:`),
    // a letter first: never a chat's key, which starts with a digit
    forCaller: (scope, tokenizer) => under(`c${scope.length}:${scope}${tokenizer}:`),
  };
}

/** The process's one store of conversation counts: a count depends only on the text it is kept
 *  under, so gateways sharing a process (tests) may share it. */
export const historyCounts = createHistoryCounts();
