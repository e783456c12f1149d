// Caps on a caller's calls in flight (`maxConcurrent` of an app, a key, a share link's user;
// docs/routing.md#priority-and-fairness): a slot in every capped scope is taken when the request is
// admitted and freed when it ends, whichever way (answered, cut, the client gone, a deadline). The
// slots live in the cluster state, so the caps hold across instances; one more call is refused at
// once, 429 concurrency_limit with Retry-After: 1.
import type { ClusterState } from "../cluster/types.js";
import { GatewayError } from "../http/errors.js";

export interface ConcurrencyLimit {
  /** `app:<id>`, `key:<name>` or `share:<shareId>:user:<hash>` */
  scope: string;
  /** who the cap belongs to, in words, for messages */
  label: string;
  /** calls in flight at once */
  max: number;
}

/** Frees the slots a request took; calling it again does nothing. */
export type FreeSlots = () => void;

const none: FreeSlots = () => {};
let calls = 0;

/** Takes a slot in every capped scope, or throws the 429 naming the full one (in words for the
 *  public when `forPublic`: a share link's user is told no configured number). */
export async function takeSlots(state: ClusterState, limits: ConcurrencyLimit[], forPublic: boolean, now: number): Promise<FreeSlots> {
  if (limits.length === 0) return none;
  const id = String(++calls);
  const taken = await state.takeSlots(limits, id, now);
  if (!taken.ok) throw concurrencyLimit(limits.find((l) => l.scope === taken.scope)!, forPublic);
  let open = true;
  return () => {
    if (!open) return;
    open = false;
    // a slot not freed is left to its TTL
    void state.freeSlots(limits.map((l) => l.scope), id).catch(() => {});
  };
}

function concurrencyLimit(limit: ConcurrencyLimit, forPublic: boolean): GatewayError {
  const message = forPublic
    ? "Too many questions at once — wait for an answer, then ask again."
    : `${limit.label} allows ${limit.max} calls at once; retry when one has finished.`;
  return new GatewayError(429, "concurrency_limit", message, { type: "rate_limit_error", headers: { "Retry-After": "1" } });
}
