// FastGPT's "test model" and model-status probe name the channel a call must go to, by aiproxy's
// number, in `Aiproxy-Channel` (docs/fastgpt.md#model-calls): an admin key's call goes to that
// channel alone — no failover, also when it is disabled or its breaker is open. Any other key may
// not choose a channel.
import { GatewayError } from "../http/errors.js";
import type { ChannelEntry, ChannelRouter } from "../upstream/router.js";
import type { Caller } from "./caller.js";

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
