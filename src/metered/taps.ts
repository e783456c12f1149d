// Taps (docs/architecture.md#taps): hooks the one pipeline calls at fixed points of every metered
// request — a cross-cutting concern (body logging, tracing, a cache) is one file that implements
// `Tap` and is registered in MeteredDeps.taps. Every point is synchronous and must not throw; a tap
// that sits a request out costs it nothing past `open`.
import type { GatewayError } from "../http/errors.js";
import type { AttemptOutcome, RouteDecision } from "../observability/observer.js";
import type { Attempt } from "../upstream/attempt.js";
import type { KeyIdentity } from "../auth/keys.js";
import type { Cancel } from "../http/cancel.js";
import type { RequestFacts } from "../http/facts.js";
import type { Caller } from "./caller.js";
import type { Inbound } from "./inbound.js";

/** What a tap sees of a metered request (./request.ts): its identity is the object itself — a tap
 *  keeps its own state for the request in its probe. */
export interface MeteredRequest {
  readonly inbound: Inbound;
  /** the request log's facts: requestId (HTTP), appId, keyName, model, channel, attempts, … */
  readonly facts: RequestFacts;
  /** epoch ms and performance.now() at arrival */
  readonly time: number;
  readonly started: number;
  /** known once `identified` */
  readonly key: KeyIdentity | undefined;
  readonly caller: Caller;
  /** the kind asked for (its spec's `what`: "Chat", "Embeddings", …) */
  readonly spec: { readonly what: string };
  /** the body as its kind parsed it, known once `identified` */
  readonly req: unknown;
  readonly model: { model: string };
  readonly cancel: Cancel;
  /** the key the request's bodies are stored by, for its usage row (set by the body tap at `identified`) */
  bodiesKey: string | undefined;
  /** the request as received, for a log's detail (its bytes until `identified` is over) */
  requestText(): Buffer | string;
}

export interface Tap {
  /** A request arrived (before its key is checked): the tap's probe for it, or undefined to sit it out. */
  open(request: MeteredRequest): Probe | undefined;
}

/** A tap's hooks for one request, every one optional; `request` is the request the probe was opened for. */
export interface Probe {
  /** the caller is known and the body parsed (request.caller, request.model, request.facts); false: the
   *  probe leaves the request (nothing more is called on it) */
  identified?(request: MeteredRequest): boolean | void;
  /** how the request's first channel was chosen (not called for a pinned channel or a single one) */
  routed?(model: string, decision: RouteDecision): void;
  /** an attempt on a channel begins (attempt.entry, attempt.index); the post of it carries the attempt */
  attemptBegun?(attempt: Attempt): void;
  /** the attempt holds a connection slot after `waitedMs` in the channel's queue */
  queued?(attempt: Attempt, waitedMs: number): void;
  attemptEnded?(attempt: Attempt, outcome: AttemptOutcome, error?: GatewayError): void;
  /** a chunk of the answer as written: a whole answer (or an error) once, a stream chunk by chunk */
  written?(chunk: string | Buffer): void;
  /** the answer is over on the wire (ended or its client gone): its status and content type */
  answered?(status: number, contentType: string): void;
  /** the request's hold settled (`error` absent) or released on a failure; not called for a request
   *  refused before a hold */
  settled?(request: MeteredRequest, error?: GatewayError): void;
  /** the pipeline is done with the request: the status it gave (a failure's, else 200); a whole
   *  HTTP answer is written after this (by the route wrapper): `answered` tells when it is out */
  finished?(request: MeteredRequest, status: number): void;
}

export const NO_PROBES: readonly Probe[] = Object.freeze([]);

/** The probes of the taps that stay for `request`. */
export function openProbes(taps: readonly Tap[] | undefined, request: MeteredRequest): readonly Probe[] {
  if (!taps || taps.length === 0) return NO_PROBES;
  let probes: Probe[] | undefined; // made only when a tap stays
  for (const tap of taps) {
    const probe = tap.open(request);
    if (probe) (probes ??= []).push(probe);
  }
  return probes ?? NO_PROBES;
}
