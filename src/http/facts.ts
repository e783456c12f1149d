// What a handler learned about its request, kept on the event for the request log and metrics.
import type { H3Event } from "h3";
import type { RequestRecord } from "../observability/observer.js";

export type RequestFacts = Partial<
  Pick<
    RequestRecord,
    "requestId" | "appId" | "keyName" | "shareId" | "model" | "channel" | "attempts" | "stream" | "inputTokens" | "outputTokens" | "points" | "ttftMs" | "errorCode" | "finishReason" | "upstreamMessage" | "pointsOverHold"
  >
>;

export function factsOf(event: H3Event): RequestFacts {
  const ctx = event.context as { facts?: RequestFacts };
  return (ctx.facts ??= {});
}
