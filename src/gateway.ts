// createGateway(config, deps): builds the h3 app and everything its routes need. It does not listen;
// src/main.ts does. Tests build it with an in-memory store and drive it on a random port.
import { H3 } from "h3";
import { createKeyring } from "./auth/keys.js";
import { createChatHandler } from "./chat/handler.js";
import { createMemoryClusterState } from "./cluster/memory.js";
import type { ClusterState } from "./cluster/types.js";
import { createQuota } from "./chat/quota.js";
import type { Config } from "./config/schema.js";
import { readJsonBody } from "./http/body.js";
import { Inflight } from "./http/inflight.js";
import { notFound } from "./http/errors.js";
import { jsonResponse } from "./http/json.js";
import { createRouteWrapper } from "./http/observe.js";
import { createMetrics } from "./metrics/prometheus.js";
import { metricsResponse } from "./metrics/route.js";
import { createHealth } from "./observability/health.js";
import { combineObservers, type Observer, type ProcessErrorKind } from "./observability/observer.js";
import { createRequestLog } from "./observability/request-log.js";
import { createShareAuth, type ShareAuth } from "./share/callbacks.js";
import { resolveShareLink } from "./share/links.js";
import { createShareRoutes } from "./share/routes.js";
import type { Store } from "./store/types.js";
import { createChannelRouter } from "./upstream/router.js";
import { createAdminRoutes } from "./admin-routes.js";

const FINISH_DRAIN_MS = 10_000;

export interface GatewayDeps {
  store: Store;
  /** more listeners besides metrics and the request log (tests) */
  observer?: Observer;
  /** replaces the share-link callback client (tests) */
  shareAuth?: ShareAuth;
  /** state shared with other instances; in-process when absent */
  state?: ClusterState;
}

export interface Gateway {
  app: H3;
  /** Shutdown, first step: refuses new requests (503), waits up to `timeoutMs` for those in flight,
   *  then cuts what remains (error event, finishReason "shutdown") and waits for it to be settled. */
  drain(timeoutMs: number): Promise<void>;
  /** waits for queued share-link reports, then releases pools, logs and timers (not the store) */
  close(): Promise<void>;
  /** counts an error that reached the process's last resort */
  processError(kind: ProcessErrorKind): void;
}

export function createGateway(config: Config, deps: GatewayDeps): Gateway {
  // 1. Lookups built once from the config.
  const models = new Map(config.llmModels.map((m) => [m.model, m]));
  const apps = new Map(config.apps.map((a) => [a.id, a]));
  const links = new Map(config.shareLinks.map((l) => [l.shareId, l]));
  const keyring = createKeyring(config.apiKeys);

  // 2. Who listens: metrics, the request log, and whatever the caller adds.
  const metrics = createMetrics({ models: [...models.keys()], apps: [...apps.keys()], channels: config.channels.map((c) => c.name) });
  const requestLog = createRequestLog(config.server.log);
  const observer = combineObservers([metrics, requestLog, ...(deps.observer ? [deps.observer] : [])]);

  // 3. The working parts.
  const state = deps.state ?? createMemoryClusterState(config.routing.breaker);
  const router = createChannelRouter(config.channels, observer, state);
  const shareAuth = deps.shareAuth ?? createShareAuth({ observer });
  const quota = createQuota(deps.store, state, observer);
  const health = createHealth({ ping: () => deps.store.ping() });
  const bodyLimits = { maxBytes: config.server.bodyLimitBytes, maxDepth: config.server.maxJsonDepth };
  const readJson = (event: Parameters<typeof readJsonBody>[0]) => readJsonBody(event, bodyLimits);
  const inflight = new Inflight();
  const chat = createChatHandler({
    body: bodyLimits,
    inflight,
    maxAttempts: config.routing.maxAttempts,
    models,
    apps,
    keyring,
    router,
    quota,
    observer,
    store: deps.store,
    shareAuth,
    resolveShareLink: (shareId, now) => resolveShareLink(links, shareId, now),
  });
  const share = createShareRoutes({ links, apps, store: deps.store, auth: shareAuth, readJson });
  const admin = createAdminRoutes({ keyring, models, apps, store: deps.store });

  // 4. Routes, each wrapped once for ids, errors, logs and metrics.
  const observe = createRouteWrapper(observer, inflight);
  const json = (handler: (e: Parameters<typeof readJson>[0]) => Promise<unknown>) => async (e: Parameters<typeof readJson>[0]) =>
    jsonResponse(await handler(e));
  const app = new H3();
  for (const prefix of ["/v1", "/api/v1"]) {
    app.post(`${prefix}/chat/completions`, observe(`${prefix}/chat/completions`, chat));
    app.get(`${prefix}/models`, observe(`${prefix}/models`, admin.models));
  }
  app.get("/api/v1/usage", observe("/api/v1/usage", admin.usage));
  app.post("/api/share/init", observe("/api/share/init", json(share.init)));
  app.post("/api/share/chats", observe("/api/share/chats", json(share.chats)));
  app.post("/api/share/chat", observe("/api/share/chat", json(share.chat)));
  app.get("/chat/share", observe("/chat/share", share.page));
  app.get("/metrics", (e) => metricsResponse(metrics, config.server.metricsToken, e.req.headers.get("authorization")));
  app.get("/healthz", () => health.live());
  app.get("/readyz", () => health.ready());
  // The base `/api` alone, and every unknown path: 404 in the error shape, counted under one label.
  app.all("/**", observe("unmatched", () => Promise.reject(notFound("not_found", "No such endpoint."))));

  let closing: Promise<void> | undefined;
  async function close(): Promise<void> {
    // queued finish reports get a bounded chance; what is left is dropped (and counted)
    await Promise.race([shareAuth.drain(), new Promise((resolve) => setTimeout(resolve, FINISH_DRAIN_MS).unref())]);
    await Promise.all([shareAuth.close(), router.close(), requestLog.close()]);
  }
  return {
    app,
    drain: (timeoutMs) => inflight.drain(timeoutMs),
    close: () => (closing ??= close()),
    processError: (kind) => observer.processError(kind),
  };
}
