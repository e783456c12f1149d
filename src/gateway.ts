// createGateway(config, deps): builds the h3 app and everything its routes need. It does not listen;
// src/main.ts does. Tests build it with an in-memory store and drive it on a random port. The routes
// read the current runtime (src/runtime.ts) as each request starts, so a reload swaps it atomically.
import { H3, type H3Event } from "h3";
import { DISABLED, createChannelBook } from "./upstream/channel-book.js";
import { createCreatedKeys } from "./auth/created-keys.js";
import { createStandIns } from "./auth/stand-ins.js";
import { createBatchRunner, type BatchRunner } from "./batches/runner.js";
import { createQuota } from "./metered/quota.js";
import { createMemoryClusterState } from "./cluster/memory.js";
import { createRedisClusterState } from "./cluster/redis.js";
import type { ClusterState } from "./cluster/types.js";
import { modelKinds } from "./config/fleet.js";
import { createAddressGuard, type Resolve } from "./upstream/address-guard.js";
import { upstreamChannels } from "./upstream/channels.js";
import { ConfigError } from "./config/load.js";
import type { Config } from "./config/schema.js";
import { allowedOrigin, preflightResponse } from "./http/cors.js";
import { GatewayError, notFound } from "./http/errors.js";
import { Inflight } from "./http/inflight.js";
import { createRouteWrapper } from "./http/observe.js";
import { markFastgptRoute } from "./http/route-flags.js";
import { createMetrics } from "./metrics/prometheus.js";
import { metricsResponse } from "./metrics/route.js";
import { createHealth } from "./observability/health.js";
import { combineObservers, type Listener, type Observer, type ProcessErrorKind } from "./observability/observer.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { createRequestLog } from "./observability/request-log.js";
import { ROUTES } from "./routes.js";
import { admitCaller, checksKey } from "./auth/access.js";
import { buildRuntime, type CallKind, type ReloadResult, type Runtime, type Shared } from "./runtime.js";
import type { CallAnswer, CallInput } from "./metered/memory-call.js";
import type { Tap } from "./metered/taps.js";
import type { ChannelLayer } from "./upstream/layers.js";
import type { HeadroomRule, HeadroomSlot } from "./upstream/headroom.js";
import { createShareAuth, type ShareAuth } from "./share/callbacks.js";
import type { Store } from "./store/types.js";
import { tracingOptions } from "./tracing/config.js";
import { createTracing, type Tracing } from "./tracing/tracing.js";

/** How long queued share-link finish reports get at close (a part of the shutdown's 30 s budget). */
const FINISH_DRAIN_MS = 1_000;

export interface GatewayDeps {
  store: Store;
  /** more listeners besides metrics and the request log (tests) */
  observer?: Listener;
  /** where request lines go (src/main.ts's logger); absent: one from `server.log`, closed with the gateway */
  logger?: Logger;
  /** replaces the share-link callback client (tests) */
  shareAuth?: ShareAuth;
  /** state shared with other instances (not closed by close()); absent: Redis with `cluster`, else in-process */
  state?: ClusterState;
  /** reads and validates the config again (throws ConfigError): what a reload swaps in */
  loadConfig?: () => Config;
  /** the clock of quotas by time and key expiry (tests move it through minutes and days); absent: Date.now */
  clock?: () => number;
  /** how channel hosts are resolved (tests: never real DNS); absent: the system's lookup */
  resolve?: Resolve;
  /** told of every metered request at the pipeline's fixed points (docs/architecture.md#taps) */
  taps?: readonly Tap[];
  /** layers for every OpenAI-compatible channel (docs/architecture.md#channel-layers) */
  layers?: readonly ChannelLayer[];
  /** where OTEL_EXPORTER_OTLP_* are read when the config has no `tracing` (docs/tracing.md#config); absent: process.env */
  env?: NodeJS.ProcessEnv;
}

export interface Gateway {
  app: H3;
  /** Validates the config source again and swaps it in; an invalid one changes nothing. */
  reload(): Promise<ReloadResult>;
  /** Shutdown, first step: refuses new requests (503), waits up to `timeoutMs` for those in flight,
   *  then cuts what remains (error event, finishReason "shutdown") and waits for it to be settled. */
  drain(timeoutMs: number): Promise<void>;
  /** waits for queued share-link reports, then releases pools, logs and timers (not the store) */
  close(): Promise<void>;
  /** counts an error that reached the process's last resort */
  processError(kind: ProcessErrorKind): void;
  /** A metered call with no HTTP request (a batch line), run by the current runtime and answered in
   *  memory: the same pipeline, usage row and budgets as over HTTP (docs/architecture.md#calls). */
  call(kind: CallKind, input: CallInput): Promise<CallAnswer>;
  /** The channels of `model` that may take one more batch line now (docs/batches.md#how-lines-run). */
  headroom(model: string, rule: HeadroomRule): HeadroomSlot[];
}

export function createGateway(config: Config, deps: GatewayDeps): Gateway {
  // 1. Who listens: metrics, the request log, and whatever the caller adds.
  const metrics = createMetrics(metricNames(config));
  const logger = deps.logger ?? createLogger(config.server.log);
  const requestLog = createRequestLog(logger);
  const observer = combineObservers([metrics, requestLog, ...(deps.observer ? [deps.observer] : [])]);

  // Tracing, per config (docs/tracing.md): none when it is off; made again when a reload changes it.
  const spanCounts = { exported: (n: number) => observer.traceSpansExported(n), dropped: (n: number) => observer.traceSpansDropped(n) };
  let tracing: Tracing | undefined;
  const retrace = (next: Config) => {
    const options = tracingOptions(next.tracing, deps.env ?? process.env);
    if (JSON.stringify(options) === JSON.stringify(tracing?.options)) return;
    void tracing?.shutdown();
    tracing = options && createTracing(options, spanCounts);
  };
  retrace(config);

  // 2. What outlives a reload, then the first runtime.
  // breaker options are read at each use, so a reload changes them for every channel at once (the
  // first runtime's health checks read them while it is built: `config` until it exists)
  let breakerOptions = () => config.routing.breaker;
  let linkLocalAllowed = () => config.allowLinkLocalChannels;
  const state =
    deps.state ??
    (config.cluster
      ? createRedisClusterState({ url: config.cluster.redisUrl, breaker: () => breakerOptions(), log: (message) => logger.warn(message), slotTtlMs: config.cluster.slotTtlMs })
      : createMemoryClusterState(() => breakerOptions()));
  const shared: Shared = {
    store: deps.store,
    state,
    observer,
    shareAuth: deps.shareAuth ?? createShareAuth({ observer, uids: deps.store }),
    quota: createQuota(deps.store, state, observer),
    inflight: new Inflight(),
    reload: () => reload(),
    keys: createCreatedKeys(deps.store, state),
    standIns: createStandIns(),
    wakeBatches: () => runner?.wake(),
    channels: createChannelBook(deps.store, state),
    rebuild: () => rebuild(),
    clock: deps.clock ?? Date.now,
    guard: createAddressGuard({ allowed: () => linkLocalAllowed(), resolve: deps.resolve }),
    taps: deps.taps,
    layers: deps.layers,
  };
  // `file`: config.json as last loaded; the runtime serves it with the store's channels over it
  let file = config;
  let current: Runtime = buildRuntime(config, shared);
  breakerOptions = () => current.config.routing.breaker;
  linkLocalAllowed = () => current.config.allowLinkLocalChannels;
  // 2b. The batch runner (docs/batches.md#how-lines-run): lines of batches run here on idle capacity.
  let runner: BatchRunner | undefined;
  if (config.batches.enabled) {
    runner = createBatchRunner({
      store: deps.store.batches,
      config: () => current.config.batches,
      call: (kind, input) => current.calls[kind](input),
      // the router's judgement (src/upstream/headroom.ts): the gate counts the lines it holds, and
      // keeps its reserve from them even if a line not yet in the gate was claimed on top
      headroom: (model) => current.router.headroom(model, current.config.batches),
      tokenFor: (name) => shared.standIns.tokenFor(name),
      clock: shared.clock,
      lineEnded: (endpoint, outcome) => observer.batchLine(endpoint, outcome),
      counted: (running, byStatus) => observer.batchCounts(running, byStatus),
      log: (message) => logger.warn(message),
    });
  }
  const health = createHealth({ ping: () => ready().then(() => deps.store.ping()), clusterPing: () => state.ping() });

  // 3. Routes: the table's, each wrapped once for ids, errors, logs and metrics, each reading the
  //    current runtime; then operations, CORS preflights and the 404 of every unknown path.
  const cors = (e: H3Event) => allowedOrigin(e, current.config.server.cors.origins);
  const observe = createRouteWrapper(observer, shared.inflight, cors, () => tracing);
  const app = new H3();
  for (const route of ROUTES) {
    // no request is judged before the keys created through the API are known (read once at start),
    // and none is metered while the state shared with other instances is out of reach (503 store_unavailable)
    const keyed = checksKey(route.access);
    const handle = async (event: H3Event) => {
      if (!isReady) await ready();
      if (route.metered) await state.reachable();
      // who may call it: the table's column, checked here once (the pipeline checks its own routes')
      const runtime = current;
      if (keyed) await admitCaller(runtime.keyring, route.access, event);
      return runtime.handlers[route.handler](event);
    };
    // a path FastGPT calls is flagged on its request (docs/fastgpt.md#reasoning)
    const handleFastgpt = (event: H3Event) => handle(markFastgptRoute(event));
    for (const path of route.paths) {
      const traced = route.metered || route.traced ? path : undefined;
      app.on(route.method === "ALL" ? "" : route.method, path, observe(route.label ?? path, route.fastgpt?.includes(path) ? handleFastgpt : handle, route.errors, traced));
    }
  }
  app.get("/metrics", (e) => metricsResponse(metrics, current.config.server.metricsToken, e.req.headers.get("authorization"), e.req.headers.get("accept")));
  app.get("/healthz", () => health.live());
  app.get("/readyz", () => health.ready());
  for (const path of ["/v1/**", "/api/v1/**"]) app.options(path, (e) => preflightResponse(cors(e)));
  // The base `/api` alone, and every unknown path: 404 in the error shape, counted under one label.
  app.all("/**", observe("unmatched", () => Promise.reject(notFound("not_found", "No such endpoint."))));

  // 4. Channels written through FastGPT's AI Proxy API (docs/fastgpt.md#channels): read from the store
  //    before the first request is judged, and the runtime rebuilt over the same config.json whenever
  //    they change, here or on another instance (requests in flight keep the runtime they started with).
  let channelsRead: Promise<void> | undefined;
  // once ready, always: a request then pays no promise for it
  let isReady = false;
  function ready(): Promise<void> {
    channelsRead ??= shared.channels.sync(file).then(rebuild, (err: unknown) => {
      channelsRead = undefined;
      throw storeUnavailable(err);
    });
    return Promise.all([shared.keys.ready(), channelsRead]).then(() => {
      isReady = true;
    });
  }
  /** The one runtime swap: `file` built again (with the store's channels), the old runtime's pools of
   *  removed channels closed once idle; returns the old runtime. */
  function swapIn(): Runtime {
    const old = current;
    current = buildRuntime(file, shared, old);
    metrics.setNames(metricNames(current.config));
    tellEnabled(current, observer);
    void old.router.retire(current.router.entries);
    return old;
  }
  function rebuild(): void {
    swapIn();
  }
  const stopHearingChannels = shared.channels.listen(rebuild);
  // read now, not on the first request: with a store that answers at once (SQLite) the rebuild is
  // done before the gateway listens (docs/performance.md#start-up); a failure is retried by a request
  void ready().catch(() => {});

  // 5. Reload: validate, then swap; the old runtime's pools of removed channels close once idle.
  // A reload here is told to the other instances, each of which reloads its own config source.
  let reloading = Promise.resolve<ReloadResult>({ ok: true });
  function reload(tellOthers = true): Promise<ReloadResult> {
    reloading = reloading.then(swap, swap);
    if (tellOthers) void reloading.then((result) => (result.ok ? state.publishReload() : undefined), () => {});
    return reloading;
  }
  const stopHearingReloads = state.onReload(() => void reload(false));
  async function swap(): Promise<ReloadResult> {
    const o = observer;
    let next: Config;
    try {
      if (!deps.loadConfig) throw new ConfigError("reload", ["this gateway was started without a config file to reload"]);
      next = deps.loadConfig();
    } catch (err) {
      const errors = err instanceof ConfigError ? err.problems : [err instanceof Error ? err.message : String(err)];
      o.configReloaded(false, errors);
      return { ok: false, errors };
    }
    // names are unique across config.json and the API's channels (docs/fastgpt.md#channel-writes)
    const clashing = shared.channels.clashes(next.channels.map((c) => c.name));
    if (clashing.length > 0) {
      const errors = clashing.map((name) => `channels: "${name}" is also the name of a channel created through the AI Proxy API: rename one of them`);
      o.configReloaded(false, errors);
      return { ok: false, errors };
    }
    file = next;
    retrace(next);
    // channels first seen in this config get their records (and numbers) before it is served
    await shared.channels.sync(next).catch(() => {});
    const old = swapIn();
    const hidden = hiddenChannels(current);
    o.configReloaded(true, [...restartNeeded(old.config, next), ...hidden]);
    return hidden.length > 0 ? { ok: true, hidden } : { ok: true };
  }

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    await runner?.stop();
    // queued finish reports get a bounded chance; what is left is dropped (and counted)
    await Promise.race([shared.shareAuth.drain(), new Promise((resolve) => setTimeout(resolve, FINISH_DRAIN_MS).unref())]);
    await Promise.all([shared.shareAuth.close(), current.router.close(), deps.logger ? undefined : logger.close(), shared.keys.close()]);
    await shared.guard.close();
    await tracing?.shutdown();
    stopHearingReloads();
    stopHearingChannels();
    if (!deps.state) await state.close();
  }
  return {
    app,
    reload: () => reload(),
    // batch lines stop first: those cut are left to their leases (run again after a restart)
    drain: async (timeoutMs) => {
      await runner?.stop();
      return shared.inflight.drain(timeoutMs, current.config.server.bodyTimeoutMs);
    },
    close: () => (closing ??= close()),
    processError: (kind) => observer.processError(kind),
    call: (kind, input) => current.calls[kind](input),
    headroom: (model, rule) => current.router.headroom(model, rule),
  };
}

function metricNames(config: Config) {
  // every kind's models, and the channels made for rerank models with their own requestUrl
  const models = [...modelKinds(config).keys()];
  return { models, apps: config.apps.map((a) => a.id), channels: upstreamChannels(config).map((c) => c.name) };
}

/** Each channel's status, for sluice_channel_enabled (once the metrics know the channel's name). */
function tellEnabled(runtime: Runtime, observer: Observer): void {
  for (const [name, meta] of runtime.channels.meta) observer.channelEnabled(name, meta.status !== DISABLED);
}

/** config.json's channels the store hides: said in the reload's result and log. */
function hiddenChannels(runtime: Runtime): string[] {
  return runtime.channels.hidden.map((name) => {
    const meta = runtime.channels.meta.get(name);
    return `channels: "${name}" is ${meta ? "overridden" : "deleted"} through the AI Proxy API (DELETE /api/admin/channels/${encodeURIComponent(name)}/override makes it config.json's again)`;
  });
}

function storeUnavailable(cause: unknown): GatewayError {
  return new GatewayError(503, "store_unavailable", "The gateway cannot read its channels from the store yet; retry shortly.", {
    type: "api_error",
    headers: { "Retry-After": "1" },
    cause,
  });
}

/** Settings a running gateway cannot take over: said in the log, kept until a restart. */
function restartNeeded(old: Config, next: Config): string[] {
  const notes: string[] = [];
  if (old.server.port !== next.server.port || old.server.host !== next.server.host) notes.push("server.host/port: takes effect after a restart");
  if (JSON.stringify(old.store) !== JSON.stringify(next.store)) notes.push("store: takes effect after a restart");
  if (JSON.stringify(old.server.log) !== JSON.stringify(next.server.log)) notes.push("server.log: takes effect after a restart");
  if (old.server.workers !== next.server.workers) notes.push("server.workers: takes effect after a restart");
  if (JSON.stringify(old.cluster) !== JSON.stringify(next.cluster)) notes.push("cluster: takes effect after a restart");
  return notes;
}
