// One request's trace (docs/tracing.md#spans): its server span, made by the route wrapper and carried
// on the request's facts, so the pipeline's trace tap and the share callbacks find their parent
// without a context carried by async hooks. Names only in attributes, never a key or a token.
import { ROOT_CONTEXT, SpanKind, TraceFlags, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";

export { SpanKind, SpanStatusCode, type Attributes, type Span };

/** What the server span is told when the request is over. */
export interface ServerOutcome {
  status: number;
  errorCode?: string;
  appId?: string;
  keyName?: string;
  shareId?: string;
}

export class RequestTrace {
  /** the server span's context, the parent of its children */
  readonly #context: Context;

  constructor(
    private readonly tracer: Tracer,
    readonly span: Span,
  ) {
    this.#context = trace.setSpan(ROOT_CONTEXT, span);
  }

  /** false: the trace is not sampled — its context is still passed on, no span is kept */
  get recording(): boolean {
    return this.span.isRecording();
  }
  /** the trace is exported (still so once the server span has ended, unlike `recording`) */
  get sampled(): boolean {
    return (this.span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
  }
  get traceId(): string {
    return this.span.spanContext().traceId;
  }
  get spanId(): string {
    return this.span.spanContext().spanId;
  }

  /** A span under the server span (`under` another of its spans when given); `startTime` a
   *  performance.now() value or epoch ms. */
  child(name: string, kind: SpanKind, attributes: Attributes, startTime?: number, under?: Span): Span {
    const parent = under ? trace.setSpan(ROOT_CONTEXT, under) : this.#context;
    return this.tracer.startSpan(name, { kind, attributes, startTime }, parent);
  }

  /** The server span ended with the request's status and who asked (names, never keys). */
  end(outcome: ServerOutcome): void {
    const { span } = this;
    if (span.isRecording()) {
      span.setAttribute("http.response.status_code", outcome.status);
      if (outcome.appId !== undefined) span.setAttribute("sluice.app.id", outcome.appId);
      if (outcome.keyName !== undefined) span.setAttribute("sluice.key.name", outcome.keyName);
      if (outcome.shareId !== undefined) span.setAttribute("sluice.share.id", outcome.shareId);
      if (outcome.status >= 400) span.setAttribute("error.type", outcome.errorCode ?? String(outcome.status));
      if (outcome.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}
