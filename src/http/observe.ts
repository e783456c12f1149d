// Wraps every route: request id, in-flight count, errors formatted once (in the route's dialect),
// one record per request (for answers written straight to the socket: when they have ended).
import { randomUUID } from "node:crypto";
import type { H3Event } from "h3";
import type { Observer, RequestRecord } from "../observability/observer.js";
import { shuttingDown } from "./cancel.js";
import { isTeed, writeThrough } from "./answer-out.js";
import { applyCors } from "./cors.js";
import { errorResponse, openAIError, toGatewayError, type ErrorFormat } from "./errors.js";
import { factsOf, type RequestFacts } from "./facts.js";
import type { Inflight } from "./inflight.js";
import { nodeResponse, setAnswerHeader, statusOf, type Reply } from "./node.js";
import type { Tracing } from "../tracing/tracing.js";

export type RouteHandler = (event: H3Event) => Reply | Promise<Reply>;

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** `cors(event)`: the Access-Control-Allow-Origin for this request, undefined when CORS does not apply;
 *  `tracing()`: the current config's tracing, undefined when it is off (docs/tracing.md). */
export function createRouteWrapper(
  observer: Observer,
  inflight: Inflight,
  cors: (event: H3Event) => string | undefined = () => undefined,
  tracing: () => Tracing | undefined = () => undefined,
) {
  /** `traced`: the route's path pattern, for the server span of its every request; absent: none. */
  return function observe(route: string, handler: RouteHandler, format: ErrorFormat = openAIError, traced?: string): (event: H3Event) => Promise<Reply> {
    return async (event) => {
      const started = performance.now();
      const incoming = event.req.headers.get("x-request-id");
      const facts = factsOf(event);
      // the server span, carried on the facts for the pipeline's tap and the share callbacks
      const trace = traced === undefined ? undefined : tracing()?.server(event.req.method, traced, event.req.headers);
      if (trace) facts.trace = trace;
      const requestId = (facts.requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID());
      // on the Node response: every answer carries it, a Response's (merged in by writeHead) and one
      // written straight to the socket alike, and no Headers object is made to add it
      setAnswerHeader(event, "x-request-id", requestId);
      observer.requestStarted(route);
      inflight.enter();
      const origin = cors(event);
      if (origin) applyCors(event, origin);
      let result: Reply;
      let internalError: unknown;
      try {
        // a request that arrives on a kept-alive connection during shutdown is told to go elsewhere
        if (inflight.closing) throw shuttingDown();
        result = await handler(event);
      } catch (err) {
        const error = toGatewayError(err);
        if (error.status >= 500 && error.code === "internal_error") internalError = err; // the request line carries its stack
        facts.errorCode = error.code;
        result = errorResponse(error, inflight.closing ? { connection: "close" } : undefined, format);
      } finally {
        inflight.leave();
      }
      if (result instanceof Response && !nodeResponse(event)) result.headers.set("x-request-id", requestId);
      // an answer a tap reads (body logging) is written through its writer, errors too
      if (isTeed(event)) result = await writeThrough(event, result);
      const status = statusOf(event, result);
      trace?.end({ status, errorCode: facts.errorCode, appId: facts.appId, keyName: facts.keyName, shareId: facts.shareId });
      observer.requestFinished(recordOf(facts, requestId, route, event.req.method, status, performance.now() - started, internalError));
      return result;
    };
  };
}

/**
 * The request's record, field by field: spreading the facts (an object grown property by property
 * as the request went) cost about 4 µs a request. The type makes a field added to RequestRecord
 * fail here until it is copied.
 */
function recordOf(
  f: RequestFacts,
  requestId: string,
  route: string,
  method: string,
  status: number,
  durationMs: number,
  internalError: unknown,
): RequestRecord & Record<keyof RequestRecord, unknown> {
  return {
    requestId,
    route,
    method,
    status,
    appId: f.appId,
    keyName: f.keyName,
    shareId: f.shareId,
    model: f.model,
    channel: f.channel,
    attempts: f.attempts,
    stream: f.stream,
    inputTokens: f.inputTokens,
    outputTokens: f.outputTokens,
    points: f.points,
    durationMs,
    ttftMs: f.ttftMs,
    errorCode: f.errorCode,
    finishReason: f.finishReason,
    upstreamMessage: f.upstreamMessage,
    pointsOverHold: f.pointsOverHold,
    traceId: f.trace?.traceId,
    spanId: f.trace?.spanId,
    traceSampled: f.trace?.sampled,
    internalError,
  };
}
