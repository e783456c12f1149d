// Prometheus metrics (docs/operations.md#metrics): an Observer that turns the pipeline's reports into the
// `sluice_*` and OpenTelemetry GenAI families, plus the process defaults, in a registry of its own.
// Every label value comes from a bounded set, so a caller can never grow the series count. In a
// node:cluster worker (`server.workers` > 1), render() answers for the whole instance (./cluster.ts).
import cluster from "node:cluster";
import { Registry, collectDefaultMetrics } from "prom-client";
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
import { defineFamilies, defineObservations, type Families, type ObservationsOf } from "./families.js";
import { createQuotaMetrics } from "./quota-metrics.js";
import { createBatchMetrics } from "./batch-metrics.js";
import { renderOpenMetrics } from "./openmetrics.js";
import { Tally } from "./tally.js";

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
  /** the OpenMetrics text, exemplars included; absent in a node:cluster worker, whose scrape
   *  merges every worker's registry into the Prometheus text (docs/tracing.md#exemplars) */
  renderOpenMetrics?: () => Promise<string>;
};


const MAX_ROUTES = 32;
const OTHER = "other";
const TOKEN_TYPES = ["input", "output"] as const;
const ATTEMPT_OUTCOMES: AttemptOutcome[] = ["ok", "retried", "timeout", "rate_limited", "error", "circuit_open", "queue_full"];
const SCOPE_KINDS = ["app", "key", "share"];
const ROUTE_DECISIONS: RouteDecision[] = ["prefix", "pinned", "spilled", "least_loaded"];
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
  const observed = defineObservations();
  const f = defineFamilies(registry, tally, observed, () => inflight);
  const label = createLabelBounds(opts);
  initialiseSeries(f, opts);

  return {
    ...createQuotaMetrics(registry),
    ...createBatchMetrics(registry),
    registry,
    contentType: registry.contentType,
    setNames(next) {
      const added = label.setNames(next);
      initialiseNames(f, added.channels, added.models);
    },
    render: cluster.isWorker ? joinInstanceMetrics(registry) : () => registry.metrics(),
    ...(!cluster.isWorker && { renderOpenMetrics: () => renderOpenMetrics(registry) }),

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
      // a sampled trace's id is its buckets' exemplar, scraped as OpenMetrics (docs/tracing.md#exemplars)
      const exemplar = r.traceSampled ? r.traceId : undefined;
      observed.duration.add(amount(r.durationMs) / 1000, route, undefined, exemplar);
      if (r.ttftMs !== undefined) observed.ttft.add(amount(r.ttftMs) / 1000, model, undefined, exemplar);
      recordTokens(observed, tally.tokens, model, app, "input", r.inputTokens);
      recordTokens(observed, tally.tokens, model, app, "output", r.outputTokens);
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
      // once per upstream call (priorities are configured integers, channels configured names: a bounded set)
      observed.queueWait.add(amount(seconds), label.channel(channel), String(priority));
    },

    routeDecision(model: string, decision: RouteDecision) {
      f.routeDecisions.inc({ model: label.model(model), decision });
    },

    channelLoad(channel: string, load: number) {
      f.channelLoad.set({ channel: label.channel(channel) }, amount(load));
    },

    prefixMatch(model: string, ratio: number) {
      observed.prefixMatch.add(ratio, label.model(model));
    },

    traceSpansExported(spans: number) {
      f.traceSpansExported.inc(spans);
    },

    traceSpansDropped(spans: number) {
      f.traceSpansDropped.inc(spans);
    },

    prefixIndexEntries(channel: string, entries: number) {
      f.prefixIndexEntries.set({ channel: label.channel(channel) }, entries);
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
    f.prefixIndexEntries.set({ channel }, 0);
    for (const model of models) f.cachedTokens.inc({ model, channel }, 0);
    for (const outcome of ATTEMPT_OUTCOMES) f.attempts.inc({ channel, outcome }, 0);
    for (const model of models) f.upstream.inc({ channel, model, outcome: "ok" }, 0);
  }
  for (const model of models) {
    for (const decision of ROUTE_DECISIONS) f.routeDecisions.inc({ model, decision }, 0);
    f.ttft.zero({ model });
    f.prefixMatch.zero({ model });
    for (const type of TOKEN_TYPES) f.tokenUsage.zero({ gen_ai_request_model: model, gen_ai_token_type: type });
  }
}

function recordTokens(observed: ObservationsOf, tokens: Tally, model: string, app: string, type: "input" | "output", count: number | undefined) {
  if (count === undefined) return;
  tokens.add(amount(count), model, app, type);
  observed.tokenUsage.add(amount(count), model, type);
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
