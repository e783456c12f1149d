// The channels the router routes (docs/fleet.md): the configured ones, and those the gateway makes
// for rerank models served at their own `requestUrl`, so that those are routed, metered, broken and
// reported like every configured channel.
import { channelSchema, type Config, type ReRankModelConfig } from "../config/schema.js";
import type { UpstreamChannelConfig } from "./types.js";

/** The name of the channel made for a rerank model's own `requestUrl`. */
export const requestUrlChannelName = (model: string) => `rerank:${model}`;

/** The configured channels, then one per rerank model with a `requestUrl`: that URL exactly, its
 *  `requestAuth` as the bearer key, the channel defaults otherwise, and no health check (the URL
 *  answers posts only). */
export function upstreamChannels(config: Pick<Config, "channels" | "reRankModels" | "routing">): UpstreamChannelConfig[] {
  const own = config.reRankModels.filter((m): m is ReRankModelConfig & { requestUrl: string } => m.requestUrl !== undefined);
  // the queue's aging is the routing's, the same on every channel
  const { agingMs } = config.routing;
  return [
    ...config.channels.map((c) => ({ ...c, agingMs })),
    ...own.map((m) => ({
      ...channelSchema.parse({ name: requestUrlChannelName(m.model), baseUrl: m.requestUrl, key: m.requestAuth ?? "", models: [m.model], healthCheck: { intervalMs: 0 } }),
      endpoint: true,
      agingMs,
    })),
  ];
}
