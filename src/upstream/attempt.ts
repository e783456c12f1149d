// One attempt of a request on one channel (docs/architecture.md#taps): the client a kind's attempt
// posts through — each post carrying the caller's ticket and the attempt itself, so a channel layer
// (./layers.ts) can read it — and what the request's taps are told of it: begun, its wait in the
// channel's queue, ended. (A class, not a copy of the client with its post wrapped: one object per
// attempt, no closures.)
import type { AttemptOutcome, RouteDecision } from "../observability/observer.js";
import type { GatewayError } from "../http/errors.js";
import type { Ticket } from "./gate.js";
import type { ChannelClient, ChannelEntry, PostAttempt, PostRequest, UpstreamReply } from "./types.js";

/** What the request an attempt belongs to is told of its attempts and its route (the metered
 *  request: src/metered/request.ts). */
export interface AttemptTaps {
  /** how the request's first channel was chosen */
  routed(model: string, decision: RouteDecision): void;
  begun(attempt: Attempt): void;
  /** the attempt waited `waitedMs` in the channel's queue (0 when a slot was free) */
  queued(attempt: Attempt, waitedMs: number): void;
  ended(attempt: Attempt, outcome: AttemptOutcome, error?: GatewayError): void;
  /** what the request came with (its headers) */
  readonly inbound?: { readonly headers: Headers };
}

export class Attempt implements ChannelClient, PostAttempt {
  constructor(
    /** the channel tried */
    readonly entry: ChannelEntry,
    /** what the attempt posts through: the channel's client, or a layer around it */
    private readonly client: ChannelClient,
    readonly ticket: Ticket | undefined,
    /** 1 for the request's first attempt */
    readonly index: number,
    /** the request the attempt belongs to */
    readonly taps: AttemptTaps | undefined,
    /** what the channel is sent besides, for this request (an upstream router's headers) */
    readonly headers: Record<string, string> | undefined,
  ) {}
  get name(): string {
    return this.client.name;
  }
  get incoming(): Headers | undefined {
    return this.taps?.inbound?.headers;
  }
  post(req: PostRequest): Promise<UpstreamReply> {
    // the kind's own request object, made for this one post
    req.ticket ??= this.ticket;
    req.attempt = this;
    return this.client.post(req);
  }
  /** told by the channel's queue (./gate.ts) once the post holds a connection slot */
  queued(waitedMs: number): void {
    this.taps?.queued(this, waitedMs);
  }
  close(): Promise<void> {
    return this.client.close();
  }
}
