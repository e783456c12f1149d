// Headroom (docs/batches.md#idle-capacity): which channels of a model may take one more call of the
// lowest priority now without an interactive call ever waiting for it.

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
