// Rate limits of the share-link API (docs/configuration.md#share-links): /api/share/init|chats|chat answer
// anonymous callers, and an init may ask the operator's server about a token, so each link
// (`shareLinks[].apiQpm`, its users together) and each client address (`server.shareApiQpm`, all
// links together) gets so many calls a minute. Counted in the cluster state's rate windows: one
// window for every instance when they share Redis.
import type { H3Event } from "h3";
import type { ClusterState, RateLimit } from "../cluster/types.js";
import type { ServerConfig, ShareLinkConfig } from "../config/schema.js";
import { clientAddress } from "../http/client-address.js";
import { rateLimited } from "../http/errors.js";

export interface ShareApiRateOptions {
  state: ClusterState;
  server: Pick<ServerConfig, "trustProxy" | "shareApiQpm">;
}

const noSpent = async () => 0;

/** Counts one call of `event` for its link and its address; a 429 with Retry-After when either is spent. */
export function createShareApiRate(opts: ShareApiRateOptions) {
  return async function admitShareCall(event: H3Event, link: ShareLinkConfig, now: number): Promise<void> {
    const rates: RateLimit[] = [];
    if (link.apiQpm > 0) rates.push({ scope: `share-api:${link.shareId}`, limit: link.apiQpm });
    if (opts.server.shareApiQpm > 0) {
      rates.push({ scope: `share-api-client:${clientAddress(event, opts.server.trustProxy)}`, limit: opts.server.shareApiQpm });
    }
    if (rates.length === 0) return;
    const admitted = await opts.state.admit([], 0, rates, now, noSpent);
    if (admitted.ok || admitted.refused !== "rate") return;
    // the public is told which limit, never its number
    const ofLink = admitted.scope.startsWith("share-api:");
    throw rateLimited(admitted.retryAfterMs, (seconds) =>
      ofLink ? `This share link is receiving too many requests; retry in ${seconds} s.` : `Too many requests from your address; retry in ${seconds} s.`,
    );
  };
}
