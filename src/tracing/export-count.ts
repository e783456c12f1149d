// Export that never holds a request up (docs/tracing.md#cost): at most `maxQueue` spans wait —
// queued in the batch processor or in an export under way — and one past that is dropped; an export
// that fails or times out drops its spans. Both are counted (sluice_trace_spans_dropped_total), as
// the spans a collector took are (sluice_trace_spans_exported_total).
import type { Context } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base";

/** What export reports, in spans. */
export interface ExportCounts {
  exported(spans: number): void;
  dropped(spans: number): void;
}

/** Spans accepted and not yet exported or dropped. */
interface Waiting {
  count: number;
}

/** An exporter whose every outcome is counted and whose spans leave the waiting count once known. */
export function countingExporter(inner: SpanExporter, counts: ExportCounts, waiting: Waiting): SpanExporter {
  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
      let told = false;
      const tell = (result: ExportResult) => {
        if (told) return;
        told = true;
        waiting.count -= spans.length;
        if (result.code === ExportResultCode.SUCCESS) counts.exported(spans.length);
        else counts.dropped(spans.length);
        done(result);
      };
      try {
        inner.export(spans, tell);
      } catch (error) {
        tell({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) });
      }
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
}

/** A processor in front of `inner` (the batch processor over a countingExporter sharing `waiting`)
 *  that drops, and counts, a sampled span ended while `max` spans already wait. */
export function boundedProcessor(inner: SpanProcessor, counts: ExportCounts, waiting: Waiting, max: number): SpanProcessor {
  return {
    onStart(span: Span, context: Context): void {
      inner.onStart(span, context);
    },
    onEnd(span: ReadableSpan): void {
      if ((span.spanContext().traceFlags & 1) === 0) return;
      if (waiting.count >= max) {
        counts.dropped(1);
        return;
      }
      waiting.count++;
      inner.onEnd(span);
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
  };
}
