// Headroom until the router judges it (docs/batches.md#idle-capacity): each channel serving the model
// takes at most `batches.perChannel` of this instance's lines at once. Replaced by
// `router.headroom(model, rule)` once the router has it.
import type { HeadroomSlot } from "../upstream/headroom.js";

export function perChannelHeadroom(channelsOf: (model: string) => string[], perChannel: () => number) {
  return (model: string, mine: Map<string, number>): HeadroomSlot[] =>
    channelsOf(model).map((channel) => ({ channel, free: Math.max(0, perChannel() - (mine.get(channel) ?? 0)) }));
}
