// Wraps every route: request id, in-flight count, errors formatted once, one record per request
// (for streams written straight to the socket: when the stream has ended).
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import type { Observer } from "../observability/observer.js";
import { errorResponse, toGatewayError } from "./errors.js";
import { HANDLED, factsOf } from "./facts.js";
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
      observer.requestFinished({
        ...facts,
        requestId,
        route,
        method: event.req.method,
        status: result === HANDLED ? (nodeRes?.statusCode ?? 200) : result.status,
        durationMs: performance.now() - started,
        internalError,
      });
      return result;
    };
  };
}
