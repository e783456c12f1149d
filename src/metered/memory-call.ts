// A metered call with no HTTP request behind it (docs/architecture.md#calls): a batch line, run
// through the same pipeline as an HTTP request — key, caller, budgets, failover, settling, the usage
// row — from its headers, path and body, its answer collected in memory. No H3Event, no socket.
import { FastResponse } from "srvx";
import type { AnswerListener, AnswerOut } from "../http/answer-out.js";
import { parseJsonBytes, type BodyLimits } from "../http/body.js";
import { randomUUID } from "node:crypto";
import { Cancel, shuttingDown } from "../http/cancel.js";
import { errorResponse, toGatewayError } from "../http/errors.js";
import type { RequestFacts } from "../http/facts.js";
import type { Inflight } from "../http/inflight.js";
import type { Reply } from "../http/node.js";
import type { Inbound } from "./inbound.js";
import type { InternalCall } from "./internal-call.js";
import { runMetered, type MeteredDeps } from "./pipeline.js";
import type { MeteredSpec, PlanBase, RequestParts } from "./spec.js";

export interface CallInput {
  /** the request's headers: `authorization: Bearer <key>` names the caller, as over HTTP */
  headers: Headers | Record<string, string>;
  /** the path as a client would call it (`/v1/chat/completions`): the usage row's endpoint */
  path: string;
  /** the parsed JSON body, or its bytes (parsed within the server's body limits) */
  body?: unknown;
  bytes?: Buffer;
  /** aborts the call's work, like a client that left (finish reason client_abort) */
  signal?: AbortSignal;
  /** the caller's address, for a share-link user (default "unknown") */
  address?: string;
  /** the usage row's request id (default: a fresh UUID) */
  requestId?: string;
  /** a call Sluice makes itself (a batch line): its priority, channel and usage row (./internal-call.ts) */
  internal?: InternalCall;
}

/** A whole answer: its status, headers and JSON body (an error's is its OpenAI error body). */
export interface CallAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** what the request log would have been told of the request */
  facts: RequestFacts;
}

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

export class MemoryInbound implements Inbound {
  readonly headers: Headers;
  readonly path: string;
  readonly facts: RequestFacts = {};
  readonly fastgpt = false;
  #listener: AnswerListener | undefined;

  constructor(private readonly input: CallInput) {
    this.headers = input.headers instanceof Headers ? input.headers : new Headers(input.headers);
    this.path = input.path.split("?")[0]!;
  }
  get internal(): InternalCall | undefined {
    return this.input.internal;
  }
  address(): string {
    return this.input.address ?? "unknown";
  }
  parts<Body>(body: Body): RequestParts<Body> {
    const query = new URLSearchParams(this.input.path.split("?")[1] ?? "");
    return { body, params: {}, query, headers: this.headers };
  }
  track(inflight: Inflight): { cancel: Cancel; untrack: () => void } {
    const cancel = new Cancel();
    const untrack = inflight.track(cancel);
    const signal = this.input.signal;
    if (!signal) return { cancel, untrack };
    const abort = () => cancel.abort("client_abort");
    if (signal.aborted) abort();
    signal.addEventListener("abort", abort, { once: true });
    return { cancel, untrack: () => (signal.removeEventListener("abort", abort), untrack()) };
  }
  async readJson(limits: BodyLimits, _cancel: Cancel, rawTexts: boolean, check?: (raw: Buffer) => void): Promise<unknown> {
    const bytes = this.input.bytes ?? Buffer.from(JSON.stringify(this.input.body ?? null));
    return parseJsonBytes(bytes, limits, rawTexts, check);
  }
  jsonParts(parts: Buffer[]): Reply {
    return new FastResponse(Buffer.concat(parts), { headers: JSON_HEADERS });
  }
  /** a call in the process is answered whole: no stream */
  stream(_write: (out: AnswerOut) => Promise<void>): undefined {
    return undefined;
  }
  tee(listener: AnswerListener): void {
    this.#listener = listener;
  }

  /** The reply (or the error thrown) as a CallAnswer; the answer's bytes told to the tee. */
  async collect(run: Promise<Reply>): Promise<CallAnswer> {
    let response: Response;
    try {
      response = (await run) as Response;
    } catch (err) {
      const error = toGatewayError(err);
      this.facts.errorCode = error.code;
      response = errorResponse(error);
    }
    const text = await response.text();
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    this.#listener?.written(text);
    this.#listener?.closed(response.status, headers["content-type"] ?? "");
    return { status: response.status, headers, body: text ? JSON.parse(text) : undefined, facts: this.facts };
  }
}

/** Runs `input` through the one metered pipeline as `spec`'s kind, answered in memory: the key,
 *  caller, budgets, failover, settling and usage row as over HTTP. Counted in flight (a shutdown
 *  waits for it, then cuts it). Never rejects: a refusal is its error answer. */
export async function callInMemory<Req, Model extends { model: string }, Plan extends PlanBase, Answer, Body>(
  input: CallInput,
  deps: MeteredDeps,
  spec: MeteredSpec<Req, Model, Plan, Answer, Body>,
): Promise<CallAnswer> {
  const inbound = new MemoryInbound(input);
  inbound.facts.requestId = input.requestId ?? randomUUID();
  deps.inflight.enter();
  try {
    return await inbound.collect(deps.inflight.closing ? Promise.reject(shuttingDown()) : runMetered(inbound, deps, spec));
  } finally {
    deps.inflight.leave();
  }
}
