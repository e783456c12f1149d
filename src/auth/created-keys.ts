// Keys created through the operations API (docs/operations.md#keys-api). The live ones are held in memory by
// sha256 digest, so a request's lookup touches no store; they are loaded from the store at start and
// read again on every key change heard through the cluster state (a notice carries a name, never a
// key's identity), and a revocation drops its key at once — on every instance, as the change
// reaches each. A key not known here is looked up by its digest (one indexed row, never a read of
// every key), and a digest the store does not hold is remembered a while (bounded, LRU), so
// unknown keys cost a store at most one lookup each. lastUsedAt is noted in memory per request
// and written to the store every few seconds, one transaction for all the keys used meanwhile.
import { hash, randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { ClusterState, KeyChange } from "../cluster/types.js";
import { GatewayError } from "../http/errors.js";
import type { CreatedKeyRow, Store } from "../store/types.js";
import { CREATED_KEY_PREFIX, type KeyIdentity, type KeySource } from "./keys.js";

const KEY_PREFIX = CREATED_KEY_PREFIX;
/** 32 random bytes: 43 url-safe characters after the prefix */
const KEY_RANDOM_BYTES = 32;
const USE_FLUSH_MS = 5_000;
/** Digests the store was asked for and does not hold: at most this many, each for at most MISS_TTL_MS
 *  (forgotten at once when a key change is heard) */
const MAX_MISSES = 10_000;
const MISS_TTL_MS = 60_000;
const CREATED_KINDS = new Set<string>(["app", "global"]);

export interface NewKey {
  name: string;
  kind: "app" | "global";
  appId?: string;
  maxUsagePoints: number;
  qpm: number;
  tpm: number;
  periodPoints: number;
  period: "day" | "week" | "month";
  /** epoch ms; null: never */
  expiresAt: number | null;
}

export interface CreatedKeys extends KeySource {
  /** Resolves once the created keys are loaded; a failed load is tried again at the next call. */
  ready(): Promise<void>;
  /** The new key (its only appearance) and its row; undefined when a created key has the name. */
  create(input: NewKey, now: number): Promise<{ key: string; row: CreatedKeyRow } | undefined>;
  /** The revoked key's row (the first revocation's time); undefined when no created key has the name. */
  revoke(name: string, now: number): Promise<CreatedKeyRow | undefined>;
  /** Every created key, revoked ones too, oldest first. */
  list(): Promise<CreatedKeyRow[]>;
  /** lastUsedAt (epoch ms) per key name: the store's, with the uses not yet written over them. */
  lastUsed(): Promise<Map<string, number>>;
  /** Writes the uses not yet written and stops listening for changes. */
  close(): Promise<void>;
}

export function createCreatedKeys(store: Store, state: ClusterState): CreatedKeys {
  let live = new Map<string, KeyIdentity>();
  let pending = new Map<string, number>();
  let changes = 0;
  let first: Promise<void> | undefined;
  const misses = new LRUCache<string, true>({ max: MAX_MISSES, ttl: MISS_TTL_MS });
  // one lookup per digest at a time: the requests of one unknown key share it
  const lookups = new Map<string, Promise<void>>();

  async function load(): Promise<void> {
    const seen = changes;
    const rows = await store.listCreatedKeys();
    // a change arrived while the store was read: the rows may predate it
    if (seen !== changes) return load();
    // created keys are app or global only: a row of another kind (the store written to by hand) is none
    live = new Map(rows.filter((r) => r.revokedAt === null && CREATED_KINDS.has(r.kind)).map((r) => [r.sha256, identityOf(r)]));
  }

  /** Drops a revoked key; a read of the store under way reads again, as it may predate the revocation. */
  function forget(name: string): void {
    changes++;
    for (const [digest, k] of live) if (k.name === name) live.delete(digest);
  }

  /** A notice names a change, and the keys are read from the store: anyone who can publish on the
   *  cluster channel could otherwise mint a key (docs/operations.md#several-instances). */
  function heard(change: KeyChange): void {
    if (change.change === "revoked") forget(change.name);
    else changes++;
    misses.clear();
    // a failed read keeps the keys known so far; the next change or restart reads again
    void load().catch(() => {});
  }
  const stopListening = state.onKeyChange(heard);

  /** The store's row for a digest, live and of a created kind, joins the known keys; a digest it
   *  does not hold is remembered. A row read while a key changed may predate the change: read again. */
  async function find(sha256: string, tries = 2): Promise<void> {
    const seen = changes;
    const row = await store.findCreatedKey(sha256);
    if (seen !== changes) return tries > 1 ? find(sha256, tries - 1) : undefined;
    if (row && row.revokedAt === null && CREATED_KINDS.has(row.kind)) live.set(row.sha256, identityOf(row));
    else misses.set(sha256, true);
  }

  function lookUp(sha256: string): Promise<void> {
    if (live.has(sha256) || misses.has(sha256)) return Promise.resolve();
    let pending = lookups.get(sha256);
    if (!pending) {
      pending = find(sha256).finally(() => lookups.delete(sha256));
      lookups.set(sha256, pending);
    }
    return pending;
  }

  async function flushUses(): Promise<void> {
    if (pending.size === 0) return;
    const uses = [...pending].map(([name, lastUsedAt]) => ({ name, lastUsedAt }));
    pending = new Map();
    try {
      await store.recordKeyUse(uses);
    } catch {
      // kept for the next flush, unless a newer use replaced it
      for (const u of uses) if (!pending.has(u.name)) pending.set(u.name, u.lastUsedAt);
    }
  }
  const flushTimer = setInterval(() => void flushUses(), USE_FLUSH_MS).unref();

  return {
    ready: () => (first ??= load().catch(() => ((first = undefined), Promise.reject(storeUnavailable())))),
    find: (sha256) => live.get(sha256),
    named: (name) => [...live.values()].find((k) => k.name === name),
    lookUp,
    used: (name, now) => void pending.set(name, now),

    async create(input, now) {
      const key = KEY_PREFIX + randomBytes(KEY_RANDOM_BYTES).toString("base64url");
      const row: CreatedKeyRow = {
        name: input.name,
        kind: input.kind,
        appId: input.appId ?? null,
        sha256: hash("sha256", key, "hex"),
        maxUsagePoints: input.maxUsagePoints,
        qpm: input.qpm,
        tpm: input.tpm,
        periodPoints: input.periodPoints,
        period: input.period,
        expiresAt: input.expiresAt,
        createdAt: now,
        revokedAt: null,
      };
      if (!(await store.createKey(row))) return undefined;
      live.set(row.sha256, identityOf(row));
      await state.publishKeyChange({ change: "created", name: row.name });
      return { key, row };
    },

    async revoke(name, now) {
      const row = await store.revokeKey(name, now);
      if (!row) return undefined;
      forget(name); // refused here at once, whenever the change reaches the other instances
      await state.publishKeyChange({ change: "revoked", name });
      return row;
    },

    list: () => store.listCreatedKeys(),

    async lastUsed() {
      const used = new Map((await store.listKeyUse()).map((u) => [u.name, u.lastUsedAt]));
      for (const [name, at] of pending) used.set(name, Math.max(at, used.get(name) ?? 0));
      return used;
    },

    async close() {
      clearInterval(flushTimer);
      stopListening();
      await flushUses();
    },
  };
}

function storeUnavailable(): GatewayError {
  return new GatewayError(503, "store_unavailable", "The gateway cannot read its keys from the store yet; retry shortly.", {
    type: "api_error",
    headers: { "Retry-After": "1" },
  });
}

function identityOf(row: CreatedKeyRow): KeyIdentity {
  const { name, kind, maxUsagePoints, qpm, tpm = 0, periodPoints = -1, period = "day", expiresAt = null } = row;
  return { name, kind, appId: row.appId ?? undefined, maxUsagePoints, qpm, tpm, periodPoints, period, expiresAt };
}
