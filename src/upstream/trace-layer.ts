// The trace layer (docs/tracing.md#propagation): every upstream post carries `traceparent` (and
// `tracestate`) naming its attempt's span, so a model server that continues it (vLLM's
// --otlp-traces-endpoint, SGLang) nests its own spans under Sluice's. An attempt with no span —
// tracing off, a call in the process — passes on what the client sent, as received.
import { attemptParents, traceHeaders } from "../tracing/propagation.js";
import type { ChannelLayer, Layer } from "./layers.js";

const layer: Layer = (next) => (req) => {
  const attempt = req.attempt;
  if (!attempt) return next(req);
  const parent = attemptParents.get(attempt);
  if (parent) req.headers = { ...req.headers, ...traceHeaders(parent) };
  else {
    const incoming = attempt.incoming;
    const traceparent = incoming?.get("traceparent");
    if (traceparent) {
      const tracestate = incoming!.get("tracestate");
      req.headers = tracestate ? { ...req.headers, traceparent, tracestate } : { ...req.headers, traceparent };
    }
  }
  return next(req);
};

/** The trace layer, the same for every channel. */
export const traceLayer: ChannelLayer = () => layer;
