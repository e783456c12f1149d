// Client API keys (docs/api.md#keys): resolves `Authorization: Bearer <key>` to a configured key, or to
// one created through the operations API (a KeySource). Keys are held only as sha256 digests and
// config keys are compared in constant time; no key is ever echoed.
import { hash, timingSafeEqual } from "node:crypto";
import type { ApiKeyConfig } from "../config/schema.js";
import { GatewayError } from "../http/errors.js";
import type { StandIns } from "./stand-ins.js";

export interface KeyIdentity {
  name: string;
  kind: "global" | "app" | "admin";
  appId?: string;
  maxUsagePoints: number;
  qpm: number;
  /** absent: the app's (docs/routing.md#priority-and-fairness) */
  priority?: number;
  /** calls in flight at once (0 or absent: no limit) */
  maxConcurrent?: number;
  tpm: number;
  periodPoints: number;
  period: "day" | "week" | "month";
  /** epoch ms after which the key is refused (401 key_expired); null: never */
  expiresAt: number | null;
}

/** Keys that do not come from the config: those created through the operations API. */
export interface KeySource {
  /** The live key with this sha256 digest (hex). A lookup by digest reveals nothing of a key: an
   *  attacker cannot choose a digest's leading characters. */
  find(sha256: string): KeyIdentity | undefined;
  /** A key (config or created) authenticated a request: its lastUsedAt moves. */
  used(name: string, now: number): void;
  /** Looks for the key with this digest in the store: found live, `find` knows it from then on.
   *  One indexed lookup, or none for a digest looked up lately and not found (docs/operations.md#keys-api). */
  lookUp?(sha256: string): Promise<void>;
  /** The live key of this name (a batch line's stand-in, src/auth/stand-ins.ts). */
  named?(name: string): KeyIdentity | undefined;
}

/** The prefix of keys made by the operations API: an unknown key with it may be one just created on another instance. */
export const CREATED_KEY_PREFIX = "sk-sluice-";

interface StoredKey {
  digest: Buffer;
  identity: KeyIdentity;
}

export const missingApiKey = () =>
  new GatewayError(401, "missing_api_key", "Missing API key: send it as 'Authorization: Bearer <key>'.");

/** docs/api.md#keys: a key past its expiresAt */
export const keyExpired = (at: number) =>
  new GatewayError(401, "key_expired", `This API key expired at ${new Date(at).toISOString()}; ask the operator for a new one.`);

const sha256 = (value: string): Buffer => hash("sha256", value, "buffer");

/** `now`: the clock that expiry is judged by (tests inject one). */
/** `standIns`: stand-in tokens of key names (batch lines, src/auth/stand-ins.ts). */
export function createKeyring(keys: ApiKeyConfig[], source?: KeySource, now: () => number = Date.now, standIns?: StandIns) {
  const stored: StoredKey[] = keys.map(({ key: _key, sha256: digest, expiresAt, ...k }) => ({
    digest: digest ? Buffer.from(digest, "hex") : sha256(_key ?? ""),
    identity: { ...k, expiresAt: expiresAt === null ? null : Date.parse(expiresAt) },
  }));

  /** The key's identity; 401 when the header is missing, garbled or names no configured key. */
  function authenticate(authorization: string | null | undefined): KeyIdentity {
    const key = bearerToken(authorization);
    if (!key) throw missingApiKey();
    const digest = sha256(key);
    let found: KeyIdentity | undefined;
    // Compare against every key, so timing reveals neither which key matched nor how many exist.
    for (const k of stored) if (timingSafeEqual(k.digest, digest)) found = k.identity;
    found ??= source?.find(digest.toString("hex")) ?? standInFor(digest.toString("hex"));
    if (!found) throw new GatewayError(401, "invalid_api_key", "Invalid API key.");
    const at = now();
    if (found.expiresAt !== null && at >= found.expiresAt) throw keyExpired(found.expiresAt);
    source?.used(found.name, at);
    return found;
  }

  /** the key a stand-in token's digest names, as it is now */
  function standInFor(digest: string): KeyIdentity | undefined {
    const name = standIns?.nameOf(digest);
    if (name === undefined) return undefined;
    return stored.find((k) => k.identity.name === name)?.identity ?? source?.named?.(name);
  }

  /** authenticate, but an unknown key that looks created through the API is looked for in the store
   *  first: behind a load balancer a key is used the moment another instance made it, and the notice
   *  of it may still be on its way. */
  async function authenticateFresh(authorization: string | null | undefined): Promise<KeyIdentity> {
    try {
      return authenticate(authorization);
    } catch (err) {
      const unknown = err instanceof GatewayError && err.code === "invalid_api_key";
      const key = bearerToken(authorization);
      if (!unknown || !source?.lookUp || !key?.startsWith(CREATED_KEY_PREFIX)) throw err;
      await source.lookUp(sha256(key).toString("hex")).catch(() => {});
      return authenticate(authorization);
    }
  }

  return { authenticate, authenticateFresh, configured: stored.map((k) => k.identity) };
}

export type Keyring = ReturnType<typeof createKeyring>;

function bearerToken(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
