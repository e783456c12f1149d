// The trace tap (docs/tracing.md#spans): for a request the route wrapper gave a server span, a span
// per upstream attempt — `{gen_ai.operation.name} {model}`, a client span with the GenAI attributes
// — and, under it, the wait in the channel's queue. Each attempt's span is the parent its post names
// upstream (upstream/trace-layer.ts). A request without a trace (tracing off, a call in the process)
// is sat out at `open`. Names and numbers only: never a prompt, an answer, a key or a token.
import { LRUCache } from "lru-cache";
import type { GatewayError } from "../http/errors.js";
import type { AttemptOutcome, RouteDecision } from "../observability/observer.js";
import { attemptParents } from "../tracing/propagation.js";
import { SpanKind, SpanStatusCode, type Attributes, type RequestTrace, type Span } from "../tracing/request-trace.js";
import type { Attempt } from "../upstream/attempt.js";
import { UpstreamError } from "../upstream/errors.js";
import type { MeteredRequest, Probe, Tap } from "./taps.js";

/** gen_ai.operation.name by the kind's `what` (chat's dialects are chat). */
const OPERATIONS: Record<string, string> = {
  Chat: "chat",
  Embeddings: "embeddings",
  Completions: "text_completion",
  Rerank: "rerank",
  Speech: "speech",
  Transcription: "transcription",
};

export const traceTap: Tap = {
  open(request) {
    const trace = request.facts.trace;
    if (!trace) return undefined;
    return trace.recording ? new TraceProbe(request, trace) : new UnsampledProbe(trace);
  },
};

/** A trace not sampled: no span is made, its context is still passed on upstream. */
class UnsampledProbe implements Probe {
  constructor(private readonly trace: RequestTrace) {}
  attemptBegun(attempt: Attempt): void {
    attemptParents.set(attempt, this.trace.span.spanContext());
  }
}

class TraceProbe implements Probe {
  #decision: RouteDecision | undefined;
  /** the attempt under way, or the one that answered until the answer is over */
  #span: Span | undefined;
  /** when that attempt began (performance.now()) */
  #began = 0;

  constructor(
    private readonly request: MeteredRequest,
    private readonly trace: RequestTrace,
  ) {}

  identified(request: MeteredRequest): void {
    // the share link's callbacks are spans of this trace too (share/callback-span.ts)
    if (request.caller.share) request.caller.share.trace = this.trace;
  }

  routed(_model: string, decision: RouteDecision): void {
    this.#decision = decision;
  }

  attemptBegun(attempt: Attempt): void {
    const { request } = this;
    const operation = OPERATIONS[request.spec.what] ?? request.spec.what.toLowerCase();
    const model = request.facts.model ?? request.model.model;
    const attributes: Attributes = {
      "gen_ai.operation.name": operation,
      "gen_ai.request.model": requestedModel(request.req) ?? model,
      ...serverOf(attempt.entry.config.baseUrl),
      "sluice.channel": attempt.entry.config.name,
      "sluice.attempt": attempt.index,
      "sluice.route.decision": attempt.index > 1 ? "failover" : (this.#decision ?? "only"),
    };
    requestParameters(request.req, attributes);
    this.#began = performance.now();
    const span = this.trace.child(`${operation} ${model}`, SpanKind.CLIENT, attributes, this.#began);
    this.#span = span;
    attemptParents.set(attempt, span.spanContext());
  }

  queued(attempt: Attempt, waitedMs: number): void {
    if (waitedMs <= 0 || !this.#span) return;
    const attributes = { "sluice.channel": attempt.entry.config.name, "sluice.priority": this.request.caller.priority ?? 0 };
    const now = performance.now();
    // the gate counts whole milliseconds of the wall clock: the wait never starts before its attempt
    const start = Math.max(now - waitedMs, this.#began);
    this.trace.child(`queue ${attempt.entry.config.name}`, SpanKind.INTERNAL, attributes, start, this.#span).end(now);
  }

  attemptEnded(_attempt: Attempt, outcome: AttemptOutcome, error?: GatewayError): void {
    if (outcome === "ok") return; // ended with its answer, which brings its usage
    const span = this.#span;
    this.#span = undefined;
    if (!span) return;
    span.setAttribute("error.type", error instanceof UpstreamError ? error.outcome : (error?.code ?? outcome));
    span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  finished(request: MeteredRequest, status: number): void {
    const span = this.#span;
    this.#span = undefined;
    if (!span) return;
    const { facts } = request;
    if (facts.stream && facts.ttftMs !== undefined) span.addEvent("gen_ai.first_token", undefined, request.started + facts.ttftMs);
    span.setAttribute("gen_ai.response.model", facts.responseModel ?? request.model.model);
    if (facts.inputTokens !== undefined) span.setAttribute("gen_ai.usage.input_tokens", facts.inputTokens);
    if (facts.outputTokens !== undefined) span.setAttribute("gen_ai.usage.output_tokens", facts.outputTokens);
    if (facts.cachedTokens !== undefined) span.setAttribute("gen_ai.usage.cache_read.input_tokens", facts.cachedTokens);
    if (facts.finishReason !== undefined) span.setAttribute("gen_ai.response.finish_reasons", [facts.finishReason]);
    if (facts.responseId !== undefined) span.setAttribute("gen_ai.response.id", facts.responseId);
    // an answer cut after its head: the attempt answered, the request failed
    if (status >= 400) {
      span.setAttribute("error.type", facts.errorCode ?? String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}

/** The model as the client named it (an alias included), where its body names one. */
function requestedModel(req: unknown): string | undefined {
  const model = (req as { model?: unknown } | undefined)?.model;
  return typeof model === "string" ? model.slice(0, 200) : undefined;
}

/** max_tokens and temperature, under whichever name the kind's body has them. */
function requestParameters(req: unknown, attributes: Attributes): void {
  const r = req as { max_tokens?: unknown; max_completion_tokens?: unknown; max_output_tokens?: unknown; temperature?: unknown } | undefined;
  const maxTokens = r?.max_tokens ?? r?.max_completion_tokens ?? r?.max_output_tokens;
  if (typeof maxTokens === "number") attributes["gen_ai.request.max_tokens"] = maxTokens;
  if (typeof r?.temperature === "number") attributes["gen_ai.request.temperature"] = r.temperature;
}

/** server.address and server.port of a channel, worked out once per base URL. */
const servers = new LRUCache<string, Attributes>({ max: 1024 });
function serverOf(baseUrl: string): Attributes {
  let attributes = servers.get(baseUrl);
  if (!attributes) {
    const url = new URL(baseUrl);
    const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
    attributes = { "server.address": url.hostname, "server.port": port };
    servers.set(baseUrl, attributes);
  }
  return attributes;
}
