// FastGPT's AI Proxy API (docs/fastgpt.md#the-admin-api): what one runtime answers on aiproxy's paths.
// Member (group) channels are aiproxy's newer API that Sluice does not keep: 501, so FastGPT shows why.
import { GatewayError } from "../http/errors.js";
import { createChannelRoutes, type ChannelRouteDeps } from "./channel-routes.js";
import { createChannelTest, type ChannelTestDeps } from "./channel-test.js";

export type AiproxyDeps = ChannelRouteDeps & ChannelTestDeps;

export function createAiproxyRoutes(deps: AiproxyDeps) {
  const channels = createChannelRoutes(deps);
  return {
    ...channels,
    test: createChannelTest(deps),
    member: () => Promise.reject(new GatewayError(501, "not_implemented", "member (group) channels are not supported by Sluice")),
    unknown: () => Promise.reject(new GatewayError(404, "not_found", "not found")),
  };
}
