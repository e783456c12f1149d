// Wraps every route: request id, in-flight count, errors formatted once, one record per request
// (for streams written straight to the socket: when the stream has ended).
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import type { Observer, RequestRecord } from "../observability/observer.js";
import { errorResponse, toGatewayError } from "./errors.js";
import { HANDLED, factsOf, type RequestFacts } from "./facts.js";
import { applyCors } from "./cors.js";
import type { Inflight } from "./inflight.js";
import { shuttingDown } from "../upstream/failover.js";

export type RouteHandler = (event: H3Event) => Response | typeof HANDLED | Promise<Response | typeof HANDLED>;

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** `cors(event)`: the Access-Control-Allow-Origin for this request, undefined when CORS does not apply. */
export function createRouteWrapper(observer: Observer, inflight: Inflight, cors: (event: H3Event) => string | undefined = () => undefined) {
  return function observe(route: string, handler: RouteHandler): RouteHandler {
    return async (event) => {
      const started = performance.now();
      const incoming = event.req.headers.get("x-request-id");
      const facts = factsOf(event);
      const requestId = (facts.requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID());
      // on the Node response: every answer carries it, a Response's (merged in by writeHead) and one
      // written straight to the socket alike, and no Headers object is made to add it
      const nodeRes = event.runtime?.node?.res as ServerResponse | undefined;
      nodeRes?.setHeader("x-request-id", requestId);
      observer.requestStarted(route);
      inflight.enter();
      const origin = cors(event);
      if (origin) applyCors(event, origin);
      let result: Response | typeof HANDLED;
      let internalError: unknown;
      try {
        // a request that arrives on a kept-alive connection during shutdown is told to go elsewhere
        if (inflight.closing) throw shuttingDown();
        result = await handler(event);
      } catch (err) {
        const error = toGatewayError(err);
        if (error.status >= 500 && error.code === "internal_error") internalError = err; // the request line carries its stack
        facts.errorCode = error.code;
        result = errorResponse(error, inflight.closing ? { connection: "close" } : undefined);
      } finally {
        inflight.leave();
      }
      if (result !== HANDLED && !nodeRes) result.headers.set("x-request-id", requestId);
      const status = result === HANDLED ? (nodeRes?.statusCode ?? 200) : result.status;
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
    internalError,
  };
}
