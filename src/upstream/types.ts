// What a channel is to the kinds above it: a place to post bytes to (docs/architecture.md#transport).
// It knows no payloads: a kind gives the path under the channel's `/v1`, the body and its type, and
// gets back a 2xx answer's status, headers and body stream — or the channel failure as an
// UpstreamError (docs/api.md#upstream-failures).
import type { Readable } from "node:stream";
import type { ChannelConfig } from "../config/schema.js";
import type { Cancel } from "../http/cancel.js";
import type { GateView, Ticket } from "./gate.js";

/** A channel as the router builds it: a configured one, or one the gateway makes for a model served
 *  at its own URL (a rerank model's `requestUrl`, docs/fleet.md#rerank). */
export interface UpstreamChannelConfig extends ChannelConfig {
  /** every post goes to `baseUrl` itself, whatever the kind's path: the model's one endpoint */
  endpoint?: boolean;
  /** a queued call gains one priority per this many ms waited (`routing.agingMs`) */
  agingMs?: number;
}

export interface PostRequest {
  /** under the channel's `/v1`: "/chat/completions", "/embeddings", "/rerank", … */
  path: string;
  /** the bytes to send; a function makes a fresh stream for each attempt (a spooled upload) */
  body: string | Buffer | (() => Readable);
  /** default `application/json` */
  contentType?: string;
  /** more request headers the body needs (a streamed body's content-length) */
  headers?: Record<string, string>;
  /** fires when the client went away, a deadline passed or the gateway shuts down */
  signal: Cancel;
  /** the model asked for, for the words of an error */
  model: string;
  /** the caller's priority and app, for the channel's queue (docs/routing.md#priority-and-fairness) */
  ticket?: Ticket;
  /** the attempt the post is made for (set by the attempt's client): a layer reads the request's
   *  per-attempt state through it (docs/architecture.md#channel-layers) */
  attempt?: PostAttempt;
}

/** The attempt a post is made for (./attempt.ts), as a layer sees it: the channel and which
 *  attempt of the request it is; an object a tap may key its per-attempt state by. */
export interface PostAttempt {
  readonly entry: ChannelEntry;
  /** 1 for the request's first attempt */
  readonly index: number;
  /** what the attempt's channel is sent besides (an upstream router's headers: ./router-headers.ts) */
  readonly headers: Record<string, string> | undefined;
  /** told by the channel's queue once the post holds a connection slot */
  queued(waitedMs: number): void;
  /** the headers the request came with (a layer may pass some on: docs/tracing.md#propagation) */
  readonly incoming: Headers | undefined;
}

export interface UpstreamReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** the answer's bytes as they arrive; consume or destroy it */
  body: Readable;
  /** the answer is cut past this many bytes (the channel's maxAnswerBytes) */
  maxBytes: number;
}

export interface ChannelClient {
  readonly name: string;
  /** POSTs to the channel; a 2xx reply, else rejects with the channel failure (UpstreamError) */
  post(req: PostRequest): Promise<UpstreamReply>;
  close(): Promise<void>;
  /** calls holding a connection and calls waiting for one; of the first, batch lines that give
   *  their slot to an interactive call (docs/batches.md#preemption) */
  load?(): { active: number; queued: number; preemptible?: number };
  /** an interactive call sent now would not wait in the channel's queue */
  hasRoom?(): boolean;
  /** its gate as headroom reads it, and the slots it keeps from tickets below 0 (./headroom.ts) */
  gate?: { view(): GateView; reserveLow(slots: number): void };
  /** a health check: resolves true when the server answered 2xx within `timeoutMs` (never rejects) */
  check?(timeoutMs: number): Promise<boolean>;
}

/** A channel as the router keeps it: its config, its client, and what is known of its health. */
export interface ChannelEntry {
  config: UpstreamChannelConfig;
  client: ChannelClient;
  /** last request or health check succeeded; undefined until the channel was first contacted */
  up: boolean | undefined;
  /** epoch ms of this instance's last request or health check on the channel */
  accessedAt?: number;
  /** the last failure, in words, for the operations API */
  lastError?: { at: number; outcome: string };
  /** the last health check failed */
  healthFailing?: boolean;
  /** callers whose requests got a plain 500 since the channel last answered well */
  serverErrorCallers?: Set<string>;
  /** the engine's last scraped figures (docs/routing.md#load): running + waiting, KV cache use, when */
  /** `lines`: this instance's preemptible batch lines when the figures came (of `queue`) */
  engine?: { queue: number; kv: number; at: number; waiting?: number; lines?: number };
  /** the tokens its engine's prefix cache holds, as its metrics last said (docs/routing.md#prefix) */
  engineCacheTokens?: number;
}
