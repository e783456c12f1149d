// What a request kind tells the one metered pipeline (docs/architecture.md#pipeline): how to read
// and check its body, which model it names, its limits and worst case, one attempt on a channel,
// and its answer: whole, with what it used, or streamed, with its sink and events. Everything else —
// keys, caller, admission, failover, deadlines, relaying a stream, settling, usage rows, the failure
// path — is the pipeline's and the same for every kind.
import type { Readable } from "node:stream";
import type { H3Event } from "h3";
import type { AnswerOut } from "../http/answer-out.js";
import type { BodyLimits } from "../http/body.js";
import type { Cancel } from "../http/cancel.js";
import type { GatewayError } from "../http/errors.js";
import type { RequestFacts } from "../http/facts.js";
import type { Reply } from "../http/node.js";
import type { AnswerSink } from "../stream/pump.js";
import type { ChannelClient } from "../upstream/types.js";
import type { AffinitySignals } from "./affinity.js";
import type { Caller, ShareFields } from "./caller.js";
import type { Inbound, RequestParts } from "./inbound.js";

export type { RequestParts } from "./inbound.js";
import type { Used } from "./meter.js";

export type { Used } from "./meter.js";
import type { Held, WorstCase } from "./quota.js";

/** The parts of `event`'s request, with its body. */
export function requestParts<Body>(event: H3Event, body: Body): RequestParts<Body> {
  return new EventParts(event, body);
}

// a class, not an object literal with a getter: V8 builds such a literal through its slow path,
// ~2 µs a request (docs/performance.md#the-non-stream-path)
class EventParts<Body> implements RequestParts<Body> {
  readonly params: Readonly<Record<string, string>>;
  readonly headers: Headers;
  constructor(
    private readonly event: H3Event,
    readonly body: Body,
  ) {
    this.params = event.context.params ?? {};
    this.headers = event.req.headers;
  }
  /** made only when a kind reads it */
  get query(): URLSearchParams {
    return this.event.url.searchParams;
  }
}

/** What the pipeline knows of a request once its caller and model are known. */
export interface Call<Req, Model> {
  /** what the call reads of its request (an HTTP request, or a call in the process): ./inbound.ts */
  inbound: Inbound;
  req: Req;
  caller: Caller;
  model: Model;
  /** epoch ms at arrival, and performance.now() at arrival for durations */
  time: number;
  started: number;
  /** fires when the client left, the deadline passed or the gateway shuts down */
  cancel: Cancel;
  facts: RequestFacts;
}

/** What `prepare` decides: the most the request can cost, and what its usage row names. */
export interface PlanBase {
  worstCase: WorstCase | number;
  /** the conversation the usage row names */
  chatId?: string;
  /** the end user the usage row names, when the kind knows better than the request's own fields
   *  (a share link's user: the operator's uid, or the digest of a localId,
   *  docs/store.md#share-link-users-in-usage-rows) */
  user?: string;
}


/** A whole answer: what it used, and its reply, made once that is settled. */
export interface Whole {
  used: Used;
  reply(): Reply | Promise<Reply>;
}

/** How an answer was cut after its head: the error, and the finish reason the usage row gives. */
export interface Cut {
  error: GatewayError;
  finishReason: string;
}

/** An answer streamed to the client: the head, then the upstream's `body` relayed through the
 *  kind's sink. The pipeline times the first token, settles what the answer used (complete or
 *  cut), then writes the closing events — or, for a cut, the kind's error event (never a clean end). */
export interface Streamed {
  headers: Record<string, string>;
  /** the upstream's bytes as they arrive; the answer is cut past `maxBytes` */
  body: Readable;
  maxBytes: number;
  /** what relays the bytes to the client; `firstContent` is called as the answer's first content goes out */
  sink(res: AnswerOut, firstContent: () => void): AnswerSink;
  /** what the answer used, complete or `cut` */
  used(cut: Cut | undefined): Promise<Used>;
  /** the closing events of a complete answer, once it is settled */
  end?(): string;
  /** the error event of a cut answer; absent: the kind has none, and an answer of a declared length
   *  is broken off (audio) */
  error?(err: GatewayError): string;
}

/** Judges a request before its body is whole: its caller, the model `pick` names among what that
 *  caller may use, and the QPM pre-check (a 403, 404 or 429 thrown); resolves to the caller. */
export type Judge<Model> = (pick?: (caller: Caller) => Model) => Promise<Caller>;

export interface MeteredSpec<Req, Model extends { model: string }, Plan extends PlanBase, Answer, Body = unknown> {
  /** the endpoint, in the words of the 403 a global key gets ("Chat", "Embeddings") */
  what: string;
  /** the Authorization-style credential sent, from the request headers (default: Authorization) */
  credential?(headers: Headers): string | null;
  /** the body (default: JSON within the server's limits). A reader of an upload calls `judge`
   *  before it stores the bulk: the caller, the model (when `pick` is given) and QPM are judged then,
   *  and the refusal is its to throw (docs/architecture.md#pipeline). */
  read?(event: H3Event, limits: BodyLimits, cancel: Cancel, judge: Judge<Model>): Promise<Body>;
  /** runs once the request is over, on every path, with what `read` gave (a spooled upload is removed) */
  release?(body: Body): void | Promise<void>;
  /** what the body read by `read` is in a log's detail (docs/fastgpt.md#bodies); absent: its JSON */
  logged?(body: Body): string;
  /** long message contents of a large JSON body stay the client's bytes (src/json/raw-text.ts) */
  rawTexts?: boolean;
  /** the request validated (a 400 naming the field): its body, path parameters, query and headers */
  parse(request: RequestParts<Body>): Req;
  /** whether the answer streams (for the request log), known from the request */
  streams?(req: Req): boolean;
  /** share-link fields of the body not yet validated, for kinds that admit share-link users (no key) */
  share?(body: unknown): ShareFields;
  /** the model the request names, among what the caller may use (404 model_not_found otherwise) */
  model(req: Req, caller: Caller): Model;
  /** the least a request of this model can cost, known before any work (one output token): a budget
   *  with less left is refused before `prepare` (docs/api.md#budgets) */
  least?(model: Model): number;
  /** limits and input checks, before any budget is held: what will be asked of the channel */
  prepare(call: Call<Req, Model>): Promise<Plan>;
  /** the hold was made: the plan shrinks to what it pays for when the budgets held less than its
   *  worst case (serve until spent, docs/api.md#budgets) */
  afford?(plan: Plan, call: Call<Req, Model>, hold: Held): Promise<void>;
  /** what keeps the request's session on one replica (docs/routing.md#affinity-key); absent: the
   *  kind has no session (embeddings, rerank, audio), its requests go to the least loaded channel */
  affinity?(plan: Plan, call: Call<Req, Model>): AffinitySignals;
  /** one attempt on one channel: rejects with the channel's failure to move to the next */
  attempt(client: ChannelClient, plan: Plan, call: Call<Req, Model>): Promise<Answer>;
  /** the answer: whole, with what it used, or streamed; the pipeline settles either */
  respond(answer: Answer, plan: Plan, call: Call<Req, Model>): Promise<Whole | Streamed>;
}

export function isStreamed(answer: Whole | Streamed): answer is Streamed {
  return "sink" in answer;
}
