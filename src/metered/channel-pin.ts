// FastGPT's "test model" and model-status probe name the channel a call must go to, by aiproxy's
// number, in `Aiproxy-Channel` (docs/fastgpt.md#model-calls): an admin key's call goes to that
// channel alone — no failover, also when it is disabled or its breaker is open. Any other key may
// not choose a channel. A call Sluice makes itself (a batch line, docs/batches.md#how-lines-run)
// names its channel too, the one headroom found, and goes to it alone the same way: a line whose
// channel fails is a failed attempt, never sent to a channel that has no room for it.
import { GatewayError } from "../http/errors.js";
import type { ChannelEntry, ChannelRouter } from "../upstream/router.js";
import type { Caller } from "./caller.js";
import type { InternalCall } from "./internal-call.js";

export const CHANNEL_PIN_HEADER = "aiproxy-channel";

/** The channel the request pins, or undefined when it pins none. */
export function pinnedChannel(headers: Headers, caller: Caller, router: ChannelRouter, model: string): ChannelEntry | undefined {
  const raw = headers.get(CHANNEL_PIN_HEADER);
  if (raw === null || raw.trim() === "") return undefined;
  if (caller.key?.kind !== "admin") throw new GatewayError(403, "channel_pin_forbidden", "Only an admin key may choose a channel (Aiproxy-Channel).");
  const id = Number(raw.trim());
  const entry = Number.isInteger(id) ? router.entries.find((e) => e.config.id === id && e.config.models.includes(model)) : undefined;
  if (!entry) throw new GatewayError(404, "channel_not_found", `No channel ${raw.trim().slice(0, 32)} serves ${model}.`);
  return entry;
}

/** The channel an internal call names, by name, among those of `model`. */
export function internalChannel(router: ChannelRouter, name: string, model: string): ChannelEntry {
  const entry = router.entries.find((e) => e.config.name === name && e.config.models.includes(model));
  if (!entry) throw new GatewayError(404, "channel_not_found", `No channel ${name.slice(0, 64)} serves ${model}.`);
  return entry;
}

/** The caller as an internal call runs: at its priority; paced, without QPM, TPM and caps on calls
 *  in flight (its budgets stay: their scopes and points unchanged). */
export function internalCaller(caller: Caller, internal: InternalCall): Caller {
  const priority = internal.priority ?? caller.priority;
  if (!internal.paced) return { ...caller, priority };
  return { ...caller, priority, limits: caller.limits.map((l) => ({ ...l, qpm: 0, tpm: 0 })), concurrency: [] };
}
