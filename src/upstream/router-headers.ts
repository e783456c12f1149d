// A channel that is itself a router over replicas (`channels[].upstreamRouter`, docs/routing.md#upstream-routers)
// picks the replica; Sluice tells it what it would have used: the request's session (the affinity
// key's digest, never the client's own id), the app for its fairness, and the caller's priority as
// an objective name: headers failover makes for each attempt, sent by a layer of such a channel.
import type { Ticket } from "./gate.js";
import type { Layer } from "./layers.js";
import type { UpstreamChannelConfig } from "./types.js";

/** The headers an upstream router is sent; the session header only when the request has one. */
export function routerHeaders(session: string | undefined, ticket: Ticket | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (session !== undefined) headers["x-session-id"] = session;
  if (ticket?.app !== undefined) headers["x-llm-d-inference-fairness-id"] = ticket.app;
  headers["x-llm-d-inference-objective"] = `priority-${ticket?.priority ?? 0}`;
  return headers;
}

/** The attempt's own headers on its post (an upstream router's, made by failover for such a channel). */
export function routedBy(channel: UpstreamChannelConfig): Layer | undefined {
  if (!channel.upstreamRouter) return undefined;
  return (next) => (req) => {
    const headers = req.attempt?.headers;
    if (headers) req.headers = req.headers ? { ...req.headers, ...headers } : headers;
    return next(req);
  };
}
