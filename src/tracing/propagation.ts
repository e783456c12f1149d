// W3C Trace Context (docs/tracing.md#propagation): the `traceparent`/`tracestate` a request came
// with, read; and the headers that make a span the parent of what the next server does.
import { ROOT_CONTEXT, defaultTextMapSetter, trace, type SpanContext, type TextMapGetter } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";

const propagator = new W3CTraceContextPropagator();

/** What a request's headers are read through (a fetch Headers, h3's included). */
const headersGetter: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

/** The span context a request's `traceparent` (and `tracestate`) names; undefined when it sent none
 *  or a malformed one. */
export function incomingSpanContext(headers: Headers): SpanContext | undefined {
  if (!headers.has("traceparent")) return undefined;
  return trace.getSpanContext(propagator.extract(ROOT_CONTEXT, headers, headersGetter));
}

/** `traceparent` (and `tracestate` when it has one) naming `parent`. */
export function traceHeaders(parent: SpanContext): Record<string, string> {
  const headers: Record<string, string> = {};
  propagator.inject(trace.setSpanContext(ROOT_CONTEXT, parent), headers, defaultTextMapSetter);
  return headers;
}

/** The span each upstream attempt's post names as its parent, filled by the pipeline's trace tap and
 *  read by the trace layer (keyed by the attempt object: gone with it). */
export const attemptParents = new WeakMap<object, SpanContext>();
