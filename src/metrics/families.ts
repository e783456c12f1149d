// The metric families Sluice exports (docs/operations.md#metrics), each with its name, help, labels
// and buckets, in one registry; the counters and histograms read what was counted from the tallies
// and observations when scraped.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { Observations, type Tally } from "./tally.js";

/** OpenTelemetry GenAI semantic conventions, `gen_ai.client.token.usage`. */
const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
/** OpenTelemetry GenAI semantic conventions, `gen_ai.server.time_to_first_token`. */
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];
/** A call's wait in a channel's queue: none at all up to the queue's 10 s default deadline and past it. */
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** The share of a prefix the chosen channel held (docs/routing.md#metrics). */
const MATCH_BUCKETS = [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1];
/** OpenTelemetry GenAI semantic conventions, `gen_ai.server.request.duration`. */
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

export type Families = ReturnType<typeof defineFamilies>;

export type Tallies = Record<"requests" | "tokens" | "points" | "routePoints" | "upstream" | "attempts", Tally>;

/** The histograms' observations, counted per bucket until a scrape reads them. */
export function defineObservations() {
  return {
    duration: new Observations(DURATION_BUCKETS),
    ttft: new Observations(TTFT_BUCKETS),
    tokenUsage: new Observations(TOKEN_BUCKETS),
    queueWait: new Observations(WAIT_BUCKETS),
    prefixMatch: new Observations(MATCH_BUCKETS),
  };
}

export type ObservationsOf = ReturnType<typeof defineObservations>;

export function defineFamilies(registers: Registry, tally: Tallies, observed: ObservationsOf, inflight: () => number) {
  const reg = { registers: [registers] };
  return {
    requests: new Counter({
      name: "sluice_requests_total",
      help: "Finished HTTP requests by route pattern, model, app and status code.",
      labelNames: ["route", "model", "app", "status"] as const,
      collect() {
        tally.requests.flushInto(this);
      },
      ...reg,
    }),
    duration: new Histogram({
      name: "sluice_request_duration_seconds",
      help: "Time from request arrival to the end of the response, by route pattern.",
      labelNames: ["route"] as const,
      buckets: DURATION_BUCKETS,
      collect() {
        observed.duration.flushInto(this);
      },
      ...reg,
    }),
    ttft: new Histogram({
      name: "gen_ai_server_time_to_first_token_seconds",
      help: "Time to the first streamed token, by model.",
      labelNames: ["model"] as const,
      buckets: TTFT_BUCKETS,
      collect() {
        observed.ttft.flushInto(this);
      },
      ...reg,
    }),
    tokenUsage: new Histogram({
      name: "gen_ai_client_token_usage",
      help: "Tokens per answered request, by model and token type (input/output).",
      labelNames: ["gen_ai_request_model", "gen_ai_token_type"] as const,
      buckets: TOKEN_BUCKETS,
      collect() {
        observed.tokenUsage.flushInto(this);
      },
      ...reg,
    }),
    tokens: new Counter({
      name: "sluice_tokens_total",
      help: "Tokens used, by model, app and type (input/output).",
      labelNames: ["model", "app", "type"] as const,
      collect() {
        tally.tokens.flushInto(this);
      },
      ...reg,
    }),
    points: new Counter({
      name: "sluice_points_total",
      help: "Usage points charged, by model and app.",
      labelNames: ["model", "app"] as const,
      collect() {
        tally.points.flushInto(this);
      },
      ...reg,
    }),
    // points by the kind of request (chat, rerank, speech, …): a model may serve several routes
    routePoints: new Counter({
      name: "sluice_route_points_total",
      help: "Usage points charged, by route (the kind of request), model and app.",
      labelNames: ["route", "model", "app"] as const,
      collect() {
        tally.routePoints.flushInto(this);
      },
      ...reg,
    }),
    upstream: new Counter({
      name: "sluice_upstream_requests_total",
      help: "Upstream model calls by channel, model and outcome.",
      labelNames: ["channel", "model", "outcome"] as const,
      collect() {
        tally.upstream.flushInto(this);
      },
      ...reg,
    }),
    inflight: new Gauge({
      name: "sluice_inflight_requests",
      help: "Requests being handled right now.",
      collect() {
        this.set(inflight());
      },
      ...reg,
    }),
    shareCallbacks: new Counter({
      name: "sluice_share_callbacks_total",
      help: "Share-link auth callbacks by kind (init/start/finish) and outcome.",
      labelNames: ["kind", "outcome"] as const,
      ...reg,
    }),
    attempts: new Counter({
      name: "sluice_upstream_attempts_total",
      help: "Attempts on upstream channels by outcome: ok, retried (failed, another channel followed), timeout, rate_limited, error, circuit_open (skipped), queue_full.",
      labelNames: ["channel", "outcome"] as const,
      collect() {
        tally.attempts.flushInto(this);
      },
      ...reg,
    }),
    budgetRefusals: new Counter({
      name: "sluice_budget_refusals_total",
      help: "Requests refused because a points budget could not hold their worst case, by scope kind (app, key, share).",
      labelNames: ["scope_kind"] as const,
      ...reg,
    }),
    queueDepth: new Gauge({
      name: "sluice_channel_queue_depth",
      help: "Requests waiting for a free connection to the channel.",
      labelNames: ["channel"] as const,
      ...reg,
    }),
    queueWait: new Histogram({
      name: "sluice_queue_wait_seconds",
      help: "Time calls waited in the channel's queue for a slot (0 when one was free), by channel and the caller's configured priority.",
      labelNames: ["channel", "priority"] as const,
      buckets: WAIT_BUCKETS,
      collect() {
        observed.queueWait.flushInto(this);
      },
      ...reg,
    }),
    reloads: new Counter({
      name: "sluice_config_reloads_total",
      help: "Config reloads by outcome: ok (swapped in) or error (refused; the running config was kept).",
      labelNames: ["outcome"] as const,
      ...reg,
    }),
    processErrors: new Counter({
      name: "sluice_process_errors_total",
      help: "Errors caught by the process's last resort (uncaught exceptions, unhandled rejections); the gateway carried on.",
      labelNames: ["kind"] as const,
      ...reg,
    }),
    channelWrites: new Counter({
      name: "sluice_channel_writes_total",
      help: "Channel writes and status changes through FastGPT's AI Proxy API, by op and outcome (ok, refused, error).",
      labelNames: ["op", "outcome"] as const,
      ...reg,
    }),
    channelEnabled: new Gauge({
      name: "sluice_channel_enabled",
      help: "1 when the channel may be picked; 0 when it was disabled through FastGPT's AI Proxy API.",
      labelNames: ["channel"] as const,
      aggregator: "min",
      ...reg,
    }),
    channelUp: new Gauge({
      name: "sluice_channel_up",
      help: "1 when the channel's last health check or request succeeded; 0 when it failed or the channel was not contacted yet.",
      labelNames: ["channel"] as const,
      // an instance of several workers says up only when every worker's last contact succeeded
      // (summed, two workers would say 2; the other gauges count things, and are summed)
      aggregator: "min",
      ...reg,
    }),
    // docs/routing.md#metrics
    routeDecisions: new Counter({
      name: "sluice_route_decisions_total",
      help: "How each request's first channel was chosen: prefix (the replica holding most of its prompt), pinned (its session's replica), spilled (the pinned one was unavailable or too loaded), least_loaded (no session, no prefix held, or an imbalanced group).",
      labelNames: ["model", "decision"] as const,
      ...reg,
    }),
    prefixMatch: new Histogram({
      name: "sluice_route_prefix_match_ratio",
      help: "The share of a request's prompt prefix (chunks) its chosen channel held, by model.",
      labelNames: ["model"] as const,
      buckets: MATCH_BUCKETS,
      collect() {
        observed.prefixMatch.flushInto(this);
      },
      ...reg,
    }),
    prefixIndexEntries: new Gauge({
      name: "sluice_prefix_index_entries",
      help: "Prompt chunks (1 KiB each) the channel's prefix index holds: what routing believes the replica caches.",
      labelNames: ["channel"] as const,
      ...reg,
    }),
    cachedTokens: new Counter({
      name: "sluice_upstream_cached_tokens_total",
      help: "Prompt tokens the upstream served from its prefix cache (usage.prompt_tokens_details.cached_tokens), by model and channel.",
      labelNames: ["model", "channel"] as const,
      ...reg,
    }),
    // docs/tracing.md#cost
    traceSpansExported: new Counter({
      name: "sluice_trace_spans_exported_total",
      help: "Spans the trace collector took (OTLP/HTTP export succeeded).",
      ...reg,
    }),
    traceSpansDropped: new Counter({
      name: "sluice_trace_spans_dropped_total",
      help: "Spans given up: the export queue was full (tracing.maxQueue), or an export failed or timed out.",
      ...reg,
    }),
    channelLoad: new Gauge({
      name: "sluice_channel_load",
      help: "A channel's load as routing sees it: its calls in flight, or its engine's running + waiting requests when more.",
      labelNames: ["channel"] as const,
      ...reg,
    }),
  };
}
