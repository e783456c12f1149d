// Client API keys (CONTRACTS §2): resolves `Authorization: Bearer <key>` to a configured key.
// Keys are held only as sha256 digests and compared in constant time; no key is ever echoed.
import { hash, timingSafeEqual } from "node:crypto";
import type { ApiKeyConfig } from "../config/schema.js";
import { GatewayError } from "../http/errors.js";

export interface KeyIdentity {
  name: string;
  kind: "global" | "app" | "admin";
  appId?: string;
  maxUsagePoints: number;
  qpm: number;
}

interface StoredKey {
  digest: Buffer;
  identity: KeyIdentity;
}

export const missingApiKey = () =>
  new GatewayError(401, "missing_api_key", "Missing API key: send it as 'Authorization: Bearer <key>'.");

const sha256 = (value: string): Buffer => hash("sha256", value, "buffer");

export function createKeyring(keys: ApiKeyConfig[]) {
  const stored: StoredKey[] = keys.map((k) => ({
    digest: k.sha256 ? Buffer.from(k.sha256, "hex") : sha256(k.key ?? ""),
    identity: { name: k.name, kind: k.kind, appId: k.appId, maxUsagePoints: k.maxUsagePoints, qpm: k.qpm },
  }));

  /** The key's identity; 401 when the header is missing, garbled or names no configured key. */
  function authenticate(authorization: string | null | undefined): KeyIdentity {
    const key = bearerToken(authorization);
    if (!key) throw missingApiKey();
    const digest = sha256(key);
    let found: KeyIdentity | undefined;
    // Compare against every key, so timing reveals neither which key matched nor how many exist.
    for (const k of stored) if (timingSafeEqual(k.digest, digest)) found = k.identity;
    if (!found) throw new GatewayError(401, "invalid_api_key", "Invalid API key.");
    return found;
  }

  return { authenticate };
}

export type Keyring = ReturnType<typeof createKeyring>;

function bearerToken(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
