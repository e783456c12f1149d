// Headroom (docs/batches.md#idle-capacity): which channels of a model may take one more call of the
// lowest priority now without an interactive call ever waiting for it.
import type { GateView } from "./gate.js";

/** How headroom is judged (config `batches`). */
export interface HeadroomRule {
  /** the share of a channel's `concurrency` kept free for interactive calls (at least 1 slot) */
  reserve: number;
  /** at most this many such calls at once on a channel without `concurrency` */
  perChannel: number;
  /** no such call on a channel whose engine reports more waiting requests than this */
  maxEngineWaiting: number;
}

/** A channel with room, and how many more such calls it may take now. */
export interface HeadroomSlot {
  channel: string;
  free: number;
}

/** What headroom reads of a channel (the router's view of it). */
export interface HeadroomChannel {
  name: string;
  /** `channels[].concurrency` (0: none) */
  concurrency: number;
  breakerOpen: boolean;
  /** its engine's waiting requests, while its scrape is fresh; undefined: not known */
  engineWaiting: number | undefined;
  gate: { view(): GateView; reserveLow(slots: number): void } | undefined;
}

/** How many more batch lines `c` may take now (0: none): none while an interactive call waits in
 *  its gate, its breaker is open or its engine has more waiting than the rule allows; else what its
 *  `concurrency` leaves beside the reserve (held by the gate too), or up to `perChannel` lines. */
export function freeFor(c: HeadroomChannel, rule: HeadroomRule): number {
  if (c.breakerOpen || !c.gate) return 0;
  if (c.engineWaiting !== undefined && c.engineWaiting > rule.maxEngineWaiting) return 0;
  const g = c.gate.view();
  if (g.interactiveQueued > 0) return 0;
  // lines already waiting in the gate take room before any new one
  const lowQueued = g.queued - g.interactiveQueued;
  if (c.concurrency <= 0) return Math.max(0, rule.perChannel - g.lowActive - lowQueued);
  const slots = Math.min(c.concurrency, g.connections);
  const reserve = Math.max(1, Math.ceil(rule.reserve * slots));
  c.gate.reserveLow(reserve);
  return Math.max(0, slots - reserve - g.active - lowQueued);
}
