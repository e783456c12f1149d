// FastGPT's AI Proxy API (docs/fastgpt.md#the-admin-api): what one runtime answers on aiproxy's paths.
// Member (group) channels are aiproxy's newer API that Sluice does not keep: 501, so FastGPT shows why.
import { GatewayError } from "../http/errors.js";
import { createChannelRoutes, type ChannelRouteDeps } from "./channel-routes.js";
import { createChannelTest, type ChannelTestDeps } from "./channel-test.js";
import { createDashboard, type DashboardDeps } from "./dashboard.js";
import { createLogRoutes, type LogRouteDeps } from "./log-routes.js";

export type AiproxyDeps = ChannelRouteDeps & ChannelTestDeps & Omit<LogRouteDeps & DashboardDeps, "channels">;

export function createAiproxyRoutes(deps: AiproxyDeps) {
  const channels = createChannelRoutes(deps);
  const logs = createLogRoutes({ ...deps, channels: deps.channels.channels });
  return {
    ...channels,
    test: createChannelTest(deps),
    logs: logs.search,
    logDetail: logs.detail,
    dashboard: createDashboard({ ...deps, channels: deps.channels.channels }),
    member: () => Promise.reject(new GatewayError(501, "not_implemented", "member (group) channels are not supported by Sluice")),
    unknown: () => Promise.reject(new GatewayError(404, "not_found", "not found")),
  };
}
