// What a handler learned about its request, kept on the event for the request log and metrics.
import type { H3Event } from "h3";
import type { RequestRecord } from "../observability/observer.js";

export type RequestFacts = Partial<
  Pick<RequestRecord, "appId" | "keyName" | "shareId" | "model" | "channel" | "stream" | "inputTokens" | "outputTokens" | "points" | "ttftMs" | "errorCode">
> & {
  /** for streamed answers: settles when the stream has ended, so the record is written then */
  streamDone?: Promise<{ errorCode?: string }>;
};

export function factsOf(event: H3Event): RequestFacts {
  const ctx = event.context as { facts?: RequestFacts };
  return (ctx.facts ??= {});
}
