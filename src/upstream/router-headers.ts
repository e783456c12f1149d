// A channel that is itself a router over replicas (`channels[].upstreamRouter`, docs/routing.md#upstream-routers)
// picks the replica; Sluice tells it what it would have used: the request's session (the affinity
// key's digest, never the client's own id), the app for its fairness, and the caller's priority as
// an objective name. A layer around the channel's client, as the ticket is (./failover.ts).
import type { Ticket } from "./gate.js";
import type { ChannelClient, PostRequest, UpstreamReply } from "./types.js";

/** The headers an upstream router is sent; the session header only when the request has one. */
export function routerHeaders(session: string | undefined, ticket: Ticket | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (session !== undefined) headers["x-session-id"] = session;
  if (ticket?.app !== undefined) headers["x-llm-d-inference-fairness-id"] = ticket.app;
  headers["x-llm-d-inference-objective"] = `priority-${ticket?.priority ?? 0}`;
  return headers;
}

export class RouterHeadersClient implements ChannelClient {
  constructor(
    private readonly client: ChannelClient,
    private readonly headers: Record<string, string>,
  ) {}
  get name(): string {
    return this.client.name;
  }
  post(req: PostRequest): Promise<UpstreamReply> {
    req.headers = req.headers ? { ...req.headers, ...this.headers } : this.headers;
    return this.client.post(req);
  }
  close(): Promise<void> {
    return this.client.close();
  }
}
