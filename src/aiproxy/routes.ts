// FastGPT's AI Proxy API (docs/fastgpt.md#the-admin-api): what one runtime answers on aiproxy's paths.
// Member (group) channels are aiproxy's newer API that Sluice does not keep: 501, so FastGPT shows why.
// Every path under aiproxy's prefixes asks for an admin key first, those Sluice does not serve too.
import { GatewayError } from "../http/errors.js";
import { createChannelRoutes, type ChannelRouteDeps } from "./channel-routes.js";
import { createChannelTest, type ChannelTestDeps } from "./channel-test.js";
import { createDashboard, type DashboardDeps } from "./dashboard.js";
import { createLogRoutes, type LogRouteDeps } from "./log-routes.js";

export type AiproxyDeps = ChannelRouteDeps & ChannelTestDeps & Omit<LogRouteDeps & DashboardDeps, "channels">;

export function createAiproxyRoutes(deps: AiproxyDeps) {
  const channels = createChannelRoutes(deps);
  // (401/403 before saying what is not served: the route table admits only an admin key, src/routes.ts)
  const refuse = async (err: GatewayError): Promise<never> => {
    throw err;
  };
  const logs = createLogRoutes({ ...deps, channels: deps.channels.channels });
  return {
    ...channels,
    test: createChannelTest(deps),
    logs: logs.search,
    logDetail: logs.detail,
    dashboard: createDashboard({ ...deps, channels: deps.channels.channels }),
    member: () => refuse(new GatewayError(501, "not_implemented", "member (group) channels are not supported by Sluice")),
    unknown: () => refuse(new GatewayError(404, "not_found", "not found")),
  };
}
