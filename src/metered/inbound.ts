// What a metered call reads of its request and where its answer goes (docs/architecture.md#calls):
// an HTTP request (an H3Event, answered on its Node response) or a call made in the process with no
// request behind it (memory-call.ts: a batch line, answered into memory; http-inbound.ts for HTTP). The pipeline and the kinds
// read only this — never the H3Event.
import type { H3Event } from "h3";
import type { AnswerListener, AnswerOut } from "../http/answer-out.js";
import type { BodyLimits } from "../http/body.js";
import type { Cancel } from "../http/cancel.js";
import type { RequestFacts } from "../http/facts.js";
import type { Inflight } from "../http/inflight.js";
import type { Reply } from "../http/node.js";
import type { InternalCall } from "./internal-call.js";

/** What a kind parses: the body (as its reader gave it), the path's parameters, the query and the
 *  headers — a kind whose model, stream flag or key is in the path or query needs no new step. */
export interface RequestParts<Body = unknown> {
  body: Body;
  params: Readonly<Record<string, string>>;
  query: URLSearchParams;
  headers: Headers;
}

export interface Inbound {
  readonly headers: Headers;
  /** the path called (`/v1/chat/completions`): the usage row's endpoint */
  readonly path: string;
  /** what the request log and metrics are told of the request */
  readonly facts: RequestFacts;
  /** came in on a path FastGPT calls (src/routes.ts) */
  readonly fastgpt: boolean;
  /** the HTTP request, for a kind that reads its body itself (an upload); absent for a call in the process */
  readonly event?: H3Event;
  /** a call Sluice makes itself (a batch line): its priority, channel, usage row (./internal-call.ts) */
  readonly internal?: InternalCall;
  /** the client's address (share-link users are told apart by it) */
  address(trustProxy: number): string;
  parts<Body>(body: Body): RequestParts<Body>;
  /** the request's Cancel, tracked for shutdown, until `untrack` */
  track(inflight: Inflight): { cancel: Cancel; untrack: () => void };
  /** the body as JSON within `limits`; `check` sees its bytes before they are parsed */
  readJson(limits: BodyLimits, cancel: Cancel, rawTexts: boolean, check?: (raw: Buffer) => void): Promise<unknown>;
  /** a 200 JSON answer held as parts */
  jsonParts(parts: Buffer[]): Reply | Promise<Reply>;
  /** where a streamed answer is written; undefined: this call cannot stream */
  stream(write: (out: AnswerOut) => Promise<void>): Promise<Reply> | undefined;
  /** the answer's bytes told to `listener` as they are written */
  tee(listener: AnswerListener): void;
}

