// A share-link callback to the operator's server as a span of the request that made it
// (docs/tracing.md#spans): `POST {path}`, a client span, and the `traceparent` the call carries. The
// path is the callback's own (`/shareAuth/start`): never the host's query, the token or a uid.
import { traceHeaders } from "../tracing/propagation.js";
import { SpanKind, SpanStatusCode, type RequestTrace, type Span } from "../tracing/request-trace.js";

export interface CallbackSpan {
  /** what the call sends besides its body: its traceparent (and tracestate) */
  readonly headers: Record<string, string>;
  /** the call answered `status`, or failed without an answer */
  end(status?: number): void;
}

/** The span of one callback under `trace`; undefined when the request has no trace. */
export function callbackSpan(trace: RequestTrace | undefined, path: string, authHost: string): CallbackSpan | undefined {
  if (!trace) return undefined;
  if (!trace.recording) return { headers: traceHeaders(trace.span.spanContext()), end: () => {} };
  const url = new URL(authHost);
  const span = trace.child(`POST ${path}`, SpanKind.CLIENT, {
    "http.request.method": "POST",
    "url.path": path,
    "server.address": url.hostname,
    "server.port": url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80,
  });
  return { headers: traceHeaders(span.spanContext()), end: (status) => endSpan(span, status) };
}

function endSpan(span: Span, status: number | undefined): void {
  if (status !== undefined) span.setAttribute("http.response.status_code", status);
  if (status === undefined || status >= 400) {
    span.setAttribute("error.type", status === undefined ? "unreachable" : String(status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
