// Wraps every route: request id, in-flight count, errors formatted once, one record per request
// (for streams: when the stream ends, not when the headers leave).
import { randomUUID } from "node:crypto";
import type { H3Event } from "h3";
import type { Observer } from "../observability/observer.js";
import { errorResponse, toGatewayError } from "./errors.js";
import { factsOf } from "./facts.js";

export type RouteHandler = (event: H3Event) => Response | Promise<Response>;

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

export function createRouteWrapper(observer: Observer) {
  return function observe(route: string, handler: RouteHandler): RouteHandler {
    return async (event) => {
      const started = performance.now();
      const incoming = event.req.headers.get("x-request-id");
      const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
      observer.requestStarted(route);
      let response: Response;
      let errorCode: string | undefined;
      try {
        response = await handler(event);
      } catch (err) {
        const error = toGatewayError(err);
        if (error.status >= 500 && error.code === "internal_error") console.error(`[sluice] ${requestId}:`, err);
        errorCode = error.code;
        response = errorResponse(error);
      }
      response.headers.set("x-request-id", requestId);
      const facts = factsOf(event);
      const finish = (code: string | undefined) => {
        const { streamDone, ...rest } = facts;
        observer.requestFinished({
          ...rest,
          requestId,
          route,
          method: event.req.method,
          status: response.status,
          durationMs: performance.now() - started,
          errorCode: code,
        });
      };
      if (facts.streamDone) facts.streamDone.then((end) => finish(end.errorCode), () => finish("internal_error"));
      else finish(errorCode);
      return response;
    };
  };
}
