// State that several gateway instances must share (docs/operations.md#several-instances): rate windows, budget
// reservations, circuit breakers, changes of created keys (revocations) and config reloads. One small
// interface; `memory.ts` implements it for a single instance, `redis.ts` (for `cluster.redisUrl`)
// for several.

export interface BudgetHold {
  /** `app:<id>`, `key:<name>` or `share:<shareId>` */
  scope: string;
  /** the scope's budget in points (tokens for a `tokens` hold) */
  max: number;
  /** a minute's tokens (`tpm`, docs/api.md#budgets): held from the range's `tokens`, its spent
   *  starting at 0 (never read from the store), kept a few minutes only */
  tokens?: boolean;
}

export interface RateLimit {
  /** `app:<id>`, `key:<name>` or `share:<shareId>`; the share API's `share-api:<shareId>` and
   *  `share-api-client:<address>` */
  scope: string;
  /** hits allowed in a 60-second sliding window */
  limit: number;
}

/** Serve until spent (docs/api.md#budgets): hold `max` where every budget has room for it, else
 *  what the tightest budget has left, but never less than `min`. `max` below `min` holds `max`
 *  after checking `min` fits (a check that holds nothing: `{min, max: 0}`). */
export interface PointRange {
  min: number;
  max: number;
  /** the same for the `tokens` holds (absent: {0, 0}) */
  tokens?: { min: number; max: number };
}

export type AdmitResult =
  /** `held`: the points now held in every budget (the range's max when there are no budgets) */
  | { ok: true; held: number; heldTokens: number }
  | { ok: false; refused: "budget"; scope: string }
  /** `retryAfterMs`: until the window's oldest hit leaves it */
  | { ok: false; refused: "rate"; scope: string; retryAfterMs: number };

/** A cap on calls in flight (`maxConcurrent`, docs/routing.md#priority-and-fairness). */
export interface SlotLimit {
  /** `app:<id>`, `key:<name>` or `share:<shareId>:user:<hash>` */
  scope: string;
  /** calls of the scope in flight at once */
  max: number;
}

export type SlotResult = { ok: true } | { ok: false; scope: string };

export type BreakerPhase = "closed" | "open" | "half_open";

export interface BreakerView {
  phase: BreakerPhase;
  /** consecutive failed attempts */
  failures: number;
  /** epoch ms when an open breaker lets a probe through */
  retryAt: number;
}

/** A key created through the operations API was added or revoked; `resync`: changes may have been
 *  missed (a reconnect), so every listener re-reads the created keys from the store. A notice names
 *  the key only: what a key may do is read from the store, never taken from the channel. */
export type KeyChange =
  | { change: "created"; name: string }
  | { change: "revoked"; name: string }
  | { change: "resync" };

export interface ClusterState {
  /** Admits a request in one atomic step, all or nothing: holds points (`points`, or as much of the
   *  range as every budget has room for) in every budget of `holds` and counts one hit at `now` in
   *  every 60-second window of `rates`. Refused for a budget when it is spent, or spent + held + the
   *  least points would pass its max (checked first: a request refused for its budget counts no
   *  hit); refused for a rate when a window already has `limit` hits. A refused request holds no
   *  budget and counts no hit in any window. `spent` loads a scope's settled points when the state
   *  does not know them. */
  admit(holds: BudgetHold[], points: number | PointRange, rates: RateLimit[], now: number, spent: (scope: string) => Promise<number>): Promise<AdmitResult>;
  /** Ends a hold: `points` held leave, `actual` points are added to each scope's spent (`tokens`:
   *  the scopes are `tokens` holds, and the amounts tokens). */
  settle(scopes: string[], held: number, actual: number, tokens?: boolean): Promise<void>;
  /** Takes a slot for call `id` in every scope of `limits`, all or nothing: refused, naming the
   *  scope, when one already has `max` calls in flight. A slot is held until `freeSlots`, or — shared
   *  by several instances — until its instance stops renewing it (`cluster.slotTtlMs`), so the slots
   *  of an instance that died free themselves. */
  takeSlots(limits: SlotLimit[], id: string, now: number): Promise<SlotResult>;
  /** Frees the slots call `id` took. */
  freeSlots(scopes: string[], id: string): Promise<void>;
  /** May a request (or health check) be sent to the channel now? An open breaker past its
   *  cooldown lets exactly one probe through (half-open). */
  admitChannel(channel: string, now: number): boolean;
  /** The outcome of an attempt or health check on the channel. `retryAfterMs`: the upstream's. */
  channelResult(channel: string, ok: boolean, now: number, retryAfterMs?: number): void;
  breaker(channel: string): BreakerView;
  /** Tells the other instances this one's calls in flight per channel (`own`, at `now`), and
   *  resolves to theirs, summed per channel: what each has told within the last few seconds
   *  (docs/routing.md#load). One instance: nobody else, an empty map. */
  shareChannelLoads(own: Record<string, number>, now: number): Promise<Map<string, number>>;
  /** Tells every instance, this one included, of a change the store already holds: each drops a
   *  revoked key at once (within a second across instances) and re-reads created keys. */
  publishKeyChange(change: KeyChange): Promise<void>;
  /** Hears the key changes of every instance; returns the function that stops listening. */
  onKeyChange(listener: (change: KeyChange) => void): () => void;
  /** Tells the other instances that this one reloaded its config: each reloads its own. */
  publishReload(): Promise<void>;
  /** Hears the reloads of the other instances; returns the function that stops listening. */
  onReload(listener: () => void): () => void;
  /** Tells the other instances that channels were written through FastGPT's AI Proxy API (records
   *  or statuses, docs/fastgpt.md#channels): each reads the store's channel records again. */
  publishChannelChange(): Promise<void>;
  /** Hears the channel changes of the other instances, and a resync after a reconnect (changes may
   *  have been missed); returns the function that stops listening. */
  onChannelChange(listener: () => void): () => void;
  /** Resolves when the shared state answers a round trip (for /readyz); rejects otherwise. */
  ping(): Promise<void>;
  /** Resolves at once while this instance is connected to the shared state (no round trip; asked by
   *  every metered request); rejects with 503 store_unavailable when it is not. */
  reachable(): Promise<void>;
  /** Stops timers and closes connections. */
  close(): Promise<void>;
}
