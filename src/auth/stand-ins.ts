// Stand-in credentials (docs/batches.md#how-lines-run): a batch line runs as the key that created the
// batch, but only that key's name is kept, never the key. A stand-in is a random bearer token made in
// this process for a key's name; the keyring resolves it to that key as it is now (revoked or expired:
// refused as the key would be). Never stored, never logged; bounded (LRU).
import { hash, randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";

const MAX_NAMES = 10_000;

export interface StandIns {
  /** the stand-in token of a key's name (the same one while it is remembered) */
  tokenFor(name: string): string;
  /** the key name a token's sha256 digest (hex) stands in for */
  nameOf(sha256: string): string | undefined;
}

export function createStandIns(): StandIns {
  const byName = new LRUCache<string, string>({ max: MAX_NAMES });
  const byDigest = new LRUCache<string, string>({ max: MAX_NAMES });
  return {
    tokenFor(name) {
      let token = byName.get(name);
      if (!token) {
        token = `sk-sluice-standin-${randomBytes(32).toString("base64url")}`;
        byName.set(name, token);
        byDigest.set(hash("sha256", token), name);
      }
      return token;
    },
    nameOf: (digest) => byDigest.get(digest),
  };
}
