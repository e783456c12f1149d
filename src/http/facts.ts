// What a handler learned about its request, kept on the event for the request log and metrics.
import type { H3Event } from "h3";
import type { RequestRecord } from "../observability/observer.js";
import type { RequestTrace } from "../tracing/request-trace.js";

export type RequestFacts = Partial<
  Pick<
    RequestRecord,
    "requestId" | "appId" | "keyName" | "shareId" | "model" | "channel" | "attempts" | "stream" | "inputTokens" | "outputTokens" | "points" | "ttftMs" | "errorCode" | "finishReason" | "upstreamMessage" | "pointsOverHold"
  >
> & {
  /** the request's trace when tracing is on and the route is traced (docs/tracing.md#spans) */
  trace?: RequestTrace;
  /** of inputTokens: served from the upstream's prefix cache */
  cachedTokens?: number;
  /** the id the upstream gave its answer, and the model it says answered, where the kind reads them */
  responseId?: string;
  responseModel?: string;
};

export function factsOf(event: H3Event): RequestFacts {
  const ctx = event.context as { facts?: RequestFacts };
  return (ctx.facts ??= {});
}
