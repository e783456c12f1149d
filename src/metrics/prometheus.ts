// Prometheus metrics (docs/operations.md#metrics): an Observer that turns the pipeline's reports into the
// `sluice_*` and OpenTelemetry GenAI families, plus the process defaults, in a registry of its own.
// Every label value comes from a bounded set, so a caller can never grow the series count. In a
// node:cluster worker (`server.workers` > 1), render() answers for the whole instance (./cluster.ts).
import cluster from "node:cluster";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type {
  AttemptOutcome,
  Observer,
  ProcessErrorKind,
  ChannelWriteOp,
  ChannelWriteOutcome,
  RequestRecord,
  RouteDecision,
  ShareCallbackKind,
  ShareCallbackOutcome,
  UpstreamOutcome,
} from "../observability/observer.js";
import { joinInstanceMetrics } from "./cluster.js";
import { createQuotaMetrics } from "./quota-metrics.js";

export interface MetricsOptions {
  /** every configured model's name, of every kind (src/config/fleet.ts) */
  models: string[];
  /** configured `apps[].id` values */
  apps: string[];
  /** configured `channels[].name` values */
  channels: string[];
}

export type Metrics = Observer & {
  registry: Registry;
  /** A reload: the configured names labels may take from now on (series of old names stay). */
  setNames(opts: MetricsOptions): void;
  /** the Prometheus text exposition of every family */
  render(): Promise<string>;
  contentType: string;
};

/** OpenTelemetry GenAI semantic conventions, `gen_ai.client.token.usage`. */
const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
/** OpenTelemetry GenAI semantic conventions, `gen_ai.server.time_to_first_token`. */
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];
/** OpenTelemetry GenAI semantic conventions, `gen_ai.server.request.duration`. */
/** A call's wait in a channel's queue: none at all up to the queue's 10 s default deadline and past it. */
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

const MAX_ROUTES = 32;
const OTHER = "other";
const TOKEN_TYPES = ["input", "output"] as const;
const ATTEMPT_OUTCOMES: AttemptOutcome[] = ["ok", "retried", "timeout", "rate_limited", "error", "circuit_open", "queue_full"];
const SCOPE_KINDS = ["app", "key", "share"];
const ROUTE_DECISIONS: RouteDecision[] = ["pinned", "spilled", "least_loaded"];
const PROCESS_ERROR_KINDS: ProcessErrorKind[] = ["uncaught_exception", "unhandled_rejection"];
const SHARE_KINDS: ShareCallbackKind[] = ["init", "start", "finish"];
const CHANNEL_WRITE_OPS: ChannelWriteOp[] = ["create", "update", "delete", "status"];
const CHANNEL_WRITE_OUTCOMES: ChannelWriteOutcome[] = ["ok", "refused", "error"];
const SHARE_OUTCOMES: ShareCallbackOutcome[] = ["success", "rejected", "error", "retry", "dropped"];

export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let inflight = 0;
  const tally = { requests: new Tally(), tokens: new Tally(), points: new Tally(), routePoints: new Tally(), upstream: new Tally(), attempts: new Tally() };
  const f = defineFamilies(registry, tally, () => inflight);
  const label = createLabelBounds(opts);
  const waits = new Map<string, { observe(value: number): void }>();
  initialiseSeries(f, opts);

  return {
    ...createQuotaMetrics(registry),
    registry,
    contentType: registry.contentType,
    setNames(next) {
      const added = label.setNames(next);
      initialiseNames(f, added.channels, added.models);
    },
    render: cluster.isWorker ? joinInstanceMetrics(registry) : () => registry.metrics(),

    requestStarted() {
      inflight += 1;
    },

    requestFinished(r: RequestRecord) {
      // a finish without a start must not drive the gauge below zero
      inflight = Math.max(0, inflight - 1);

      const route = label.route(r.route);
      const model = label.model(r.model);
      const app = label.app(r.appId);
      tally.requests.add(1, route, model, app, String(r.status));
      f.duration.observe({ route }, amount(r.durationMs) / 1000);
      if (r.ttftMs !== undefined) f.ttft.observe({ model }, amount(r.ttftMs) / 1000);
      recordTokens(f, tally.tokens, model, app, "input", r.inputTokens);
      recordTokens(f, tally.tokens, model, app, "output", r.outputTokens);
      if (r.points !== undefined) {
        tally.points.add(amount(r.points), model, app);
        tally.routePoints.add(amount(r.points), route, model, app);
      }
    },

    upstreamFinished(channel: string, model: string, outcome: UpstreamOutcome) {
      tally.upstream.add(1, label.channel(channel), label.model(model), outcome);
    },

    channelState(channel: string, up: boolean) {
      f.channelUp.set({ channel: label.channel(channel) }, up ? 1 : 0);
    },

    shareCallback(kind: ShareCallbackKind, outcome: ShareCallbackOutcome) {
      f.shareCallbacks.inc({ kind, outcome });
    },

    upstreamAttempt(channel: string, outcome: AttemptOutcome) {
      tally.attempts.add(1, label.channel(channel), outcome);
    },

    budgetRefused(scopeKind: string) {
      f.budgetRefusals.inc({ scope_kind: SCOPE_KINDS.includes(scopeKind) ? scopeKind : OTHER });
    },

    channelQueue(channel: string, depth: number) {
      f.queueDepth.set({ channel: label.channel(channel) }, depth);
    },

    queueWait(channel: string, priority: number, seconds: number) {
      // once per upstream call: the labelled series is looked up once (priorities are configured
      // integers, channels configured names: a bounded set)
      const name = label.channel(channel);
      const key = `${name}\0${priority}`;
      let series = waits.get(key);
      if (!series) waits.set(key, (series = f.queueWait.labels(name, String(priority))));
      series.observe(amount(seconds));
    },

    routeDecision(model: string, decision: RouteDecision) {
      f.routeDecisions.inc({ model: label.model(model), decision });
    },

    channelLoad(channel: string, load: number) {
      f.channelLoad.set({ channel: label.channel(channel) }, amount(load));
    },

    cachedTokens(channel: string, model: string, tokens: number) {
      f.cachedTokens.inc({ model: label.model(model), channel: label.channel(channel) }, amount(tokens));
    },

    configReloaded(ok: boolean) {
      f.reloads.inc({ outcome: ok ? "ok" : "error" });
    },

    processError(kind: ProcessErrorKind) {
      f.processErrors.inc({ kind });
    },

    channelWrite(op: ChannelWriteOp, outcome: ChannelWriteOutcome) {
      f.channelWrites.inc({ op, outcome });
    },

    channelEnabled(channel: string, enabled: boolean) {
      f.channelEnabled.set({ channel: label.channel(channel) }, enabled ? 1 : 0);
    },
  };
}

type Families = ReturnType<typeof defineFamilies>;

type Tallies = Record<"requests" | "tokens" | "points" | "routePoints" | "upstream" | "attempts", Tally>;

function defineFamilies(registers: Registry, tally: Tallies, inflight: () => number) {
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
      ...reg,
    }),
    ttft: new Histogram({
      name: "gen_ai_server_time_to_first_token_seconds",
      help: "Time to the first streamed token, by model.",
      labelNames: ["model"] as const,
      buckets: TTFT_BUCKETS,
      ...reg,
    }),
    tokenUsage: new Histogram({
      name: "gen_ai_client_token_usage",
      help: "Tokens per answered request, by model and token type (input/output).",
      labelNames: ["gen_ai_request_model", "gen_ai_token_type"] as const,
      buckets: TOKEN_BUCKETS,
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
      help: "How each request's first channel was chosen: pinned (its session's replica), spilled (the pinned one was unavailable or too loaded), least_loaded (no session).",
      labelNames: ["model", "decision"] as const,
      ...reg,
    }),
    cachedTokens: new Counter({
      name: "sluice_upstream_cached_tokens_total",
      help: "Prompt tokens the upstream served from its prefix cache (usage.prompt_tokens_details.cached_tokens), by model and channel.",
      labelNames: ["model", "channel"] as const,
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

/** Series the dashboard reads exist from the first scrape, so panels show zeros rather than nothing
 *  and the first real increment is seen by rate(). */
function initialiseSeries(f: Families, opts: MetricsOptions): void {
  initialiseNames(f, opts.channels, opts.models);
  for (const kind of SHARE_KINDS) for (const outcome of SHARE_OUTCOMES) f.shareCallbacks.inc({ kind, outcome }, 0);
  f.inflight.set(0);
  for (const kind of PROCESS_ERROR_KINDS) f.processErrors.inc({ kind }, 0);
  for (const outcome of ["ok", "error"]) f.reloads.inc({ outcome }, 0);
  for (const kind of SCOPE_KINDS) f.budgetRefusals.inc({ scope_kind: kind }, 0);
  for (const op of CHANNEL_WRITE_OPS) for (const outcome of CHANNEL_WRITE_OUTCOMES) f.channelWrites.inc({ op, outcome }, 0);
}

/** The series of newly configured channels and models (a reload leaves existing ones as they are). */
function initialiseNames(f: Families, channels: string[], models: string[]): void {
  for (const channel of channels) {
    // unknown until the first health check or request says otherwise (docs/operations.md#metrics)
    f.channelUp.set({ channel }, 0);
    f.queueDepth.set({ channel }, 0);
    f.queueWait.zero({ channel, priority: "0" });
    f.channelLoad.set({ channel }, 0);
    for (const model of models) f.cachedTokens.inc({ model, channel }, 0);
    for (const outcome of ATTEMPT_OUTCOMES) f.attempts.inc({ channel, outcome }, 0);
    for (const model of models) f.upstream.inc({ channel, model, outcome: "ok" }, 0);
  }
  for (const model of models) {
    for (const decision of ROUTE_DECISIONS) f.routeDecisions.inc({ model, decision }, 0);
    f.ttft.zero({ model });
    for (const type of TOKEN_TYPES) f.tokenUsage.zero({ gen_ai_request_model: model, gen_ai_token_type: type });
  }
}

function recordTokens(f: Families, tokens: Tally, model: string, app: string, type: "input" | "output", count: number | undefined) {
  if (count === undefined) return;
  tokens.add(amount(count), model, app, type);
  f.tokenUsage.observe({ gen_ai_request_model: model, gen_ai_token_type: type }, amount(count));
}

/** prom-client throws on a negative counter step and NaN poisons a sum; a report must never break a request. */
function amount(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** Maps free-form values onto the configured names; anything else shares one `other` value. */
function createLabelBounds(opts: MetricsOptions) {
  let models = new Set(opts.models);
  let apps = new Set(opts.apps);
  let channels = new Set(opts.channels);
  const routes = new Set<string>();
  const within = (known: () => Set<string>) => (value: string | undefined) =>
    !value ? "" : known().has(value) ? value : OTHER;

  return {
    model: within(() => models),
    app: within(() => apps),
    channel: within(() => channels),
    route(value: string): string {
      if (routes.has(value)) return value;
      if (routes.size >= MAX_ROUTES) return OTHER;
      routes.add(value);
      return value;
    },
    /** Replaces the known names; returns the channels and models that are new. */
    setNames(next: MetricsOptions): { channels: string[]; models: string[] } {
      const added = { channels: next.channels.filter((c) => !channels.has(c)), models: next.models.filter((m) => !models.has(m)) };
      models = new Set(next.models);
      apps = new Set(next.apps);
      channels = new Set(next.channels);
      return added;
    },
  };
}

/**
 * A counter's increments summed here per label set and handed to prom-client when the family is read
 * (its collect hook, which every scrape and every worker's collection runs): prom-client hashes and
 * checks the labels on each inc(), which cost more than the rest of a request's metrics. Label
 * values come in the order of the counter's labelNames; the sets are bounded as the labels are.
 */
class Tally {
  // one level per label value, so that a repeated label set costs a few lookups of short strings
  // (a key joined from the values cost four times as much); an entry where a label set ends
  readonly #root: TallyLevel = { next: new Map(), entry: undefined };
  readonly #entries: TallyEntry[] = [];

  /** `n` more for the label values a, b, c, d (as many as the counter has labels) */
  add(n: number, a: string, b?: string, c?: string, d?: string): void {
    let level = this.#step(this.#root, a);
    if (b !== undefined) level = this.#step(level, b);
    if (c !== undefined) level = this.#step(level, c);
    if (d !== undefined) level = this.#step(level, d);
    if (level.entry) level.entry.n += n;
    else this.#entries.push((level.entry = { values: [a, b, c, d].filter((v) => v !== undefined), n, handed: false }));
  }

  flushInto(counter: Counter<string>): void {
    for (const entry of this.#entries) {
      // `handed`: the series exists in prom-client (a zero step still makes it appear, as inc(0) did)
      if (entry.n === 0 && entry.handed) continue;
      counter.labels(...entry.values).inc(entry.n);
      entry.n = 0;
      entry.handed = true;
    }
  }

  #step(level: TallyLevel, value: string): TallyLevel {
    let next = level.next.get(value);
    if (!next) level.next.set(value, (next = { next: new Map(), entry: undefined }));
    return next;
  }
}

interface TallyLevel {
  next: Map<string, TallyLevel>;
  entry: TallyEntry | undefined;
}

interface TallyEntry {
  values: string[];
  n: number;
  handed: boolean;
}
