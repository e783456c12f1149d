// What a handler learned about its request, kept on the event for the request log and metrics.
import type { H3Event } from "h3";
import type { RequestRecord } from "../observability/observer.js";

export type RequestFacts = Partial<
  Pick<
    RequestRecord,
    "requestId" | "appId" | "keyName" | "shareId" | "model" | "channel" | "attempts" | "stream" | "inputTokens" | "outputTokens" | "points" | "ttftMs" | "errorCode" | "finishReason" | "upstreamMessage"
  >
>;

/**
 * What a handler returns once it has written the whole response to the Node response itself
 * (streams). h3 registers this symbol as "already handled" and then sends nothing more.
 */
export const HANDLED: unique symbol = Symbol.for("h3.handled") as never;

export function factsOf(event: H3Event): RequestFacts {
  const ctx = event.context as { facts?: RequestFacts };
  return (ctx.facts ??= {});
}
