// Tracing for one config (docs/tracing.md): a tracer provider of its own (never the global one),
// parent-based sampling with a ratio for new traces, a bounded batch export over OTLP/HTTP. Made
// only when tracing is on: off, no provider exists and no span is made. A reload with another
// `tracing` block makes a new one and shuts the old one down (its waiting spans flushed).
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { ROOT_CONTEXT, SpanKind, trace, type Link } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-base";
import type { TracingOptions } from "./config.js";
import { boundedProcessor, countingExporter, type ExportCounts } from "./export-count.js";
import { incomingSpanContext } from "./propagation.js";
import { RequestTrace } from "./request-trace.js";

export type { ExportCounts };

/** this process, as every trace it exports names it */
const INSTANCE_ID = randomUUID();
const VERSION = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

export interface Tracing {
  readonly options: TracingOptions;
  /** The server span of a request, `{METHOD} {route}`: continuing the trace its headers name when
   *  trusted, else a new one (the incoming kept as a link). */
  server(method: string, route: string, headers: Headers): RequestTrace;
  /** Every ended span exported or given up (within the export timeout), then the provider closed. */
  shutdown(): Promise<void>;
}

export function createTracing(options: TracingOptions, counts: ExportCounts): Tracing {
  const waiting = { count: 0 };
  const exporter = new OTLPTraceExporter({ url: options.url, headers: options.headers, timeoutMillis: options.exportTimeoutMs });
  const batch = new BatchSpanProcessor(countingExporter(exporter, counts, waiting), {
    maxQueueSize: options.maxQueue,
    maxExportBatchSize: Math.min(512, options.maxQueue),
    exportTimeoutMillis: options.exportTimeoutMs,
  });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName, "service.version": VERSION, "service.instance.id": INSTANCE_ID }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio) }),
    spanProcessors: [boundedProcessor(batch, counts, waiting, options.maxQueue)],
  });
  const tracer = provider.getTracer("sluice", VERSION);
  let closed: Promise<void> | undefined;

  return {
    options,
    server(method, route, headers) {
      const incoming = incomingSpanContext(headers);
      const trusted = incoming && options.trustIncoming;
      const links: Link[] | undefined = incoming && !trusted ? [{ context: incoming }] : undefined;
      const parent = trusted ? trace.setSpanContext(ROOT_CONTEXT, incoming) : ROOT_CONTEXT;
      const span = tracer.startSpan(
        `${method} ${route}`,
        { kind: SpanKind.SERVER, attributes: { "http.request.method": method, "http.route": route }, links },
        parent,
      );
      return new RequestTrace(tracer, span);
    },
    shutdown: () => (closed ??= provider.shutdown().catch(() => {})),
  };
}
