// What one config builds: lookups, keys, the channel router and the route handlers that read them.
// A reload builds a new one beside the old (CONTRACTS §12): requests in flight keep the runtime they
// started with; the router hands unchanged channels (their pools, gates and state) to the new one.
import type { H3Event } from "h3";
import { createKeyRoutes } from "./admin/keys.js";
import { createAdminRoutes } from "./admin/routes.js";
import type { CreatedKeys } from "./auth/created-keys.js";
import { createKeyring } from "./auth/keys.js";
import { createChatHandler } from "./chat/handler.js";
import type { Quota } from "./chat/quota.js";
import type { ClusterState } from "./cluster/types.js";
import type { Config } from "./config/schema.js";
import { createEmbeddingsHandler } from "./embeddings/handler.js";
import { readJsonBody } from "./http/body.js";
import type { HANDLED } from "./http/facts.js";
import type { Inflight } from "./http/inflight.js";
import type { Observer } from "./observability/observer.js";
import type { ShareAuth } from "./share/callbacks.js";
import { resolveShareLink } from "./share/links.js";
import { createShareRoutes } from "./share/routes.js";
import type { Store } from "./store/types.js";
import { createChannelRouter, type ChannelRouter } from "./upstream/router.js";

/** What outlives a reload: the store, shared state, listeners, share callbacks, requests in flight,
 *  keys created through the API. */
export interface Shared {
  store: Store;
  state: ClusterState;
  observer: Observer;
  shareAuth: ShareAuth;
  quota: Quota;
  inflight: Inflight;
  /** the gateway's reload, for the operations API */
  reload: () => Promise<ReloadResult>;
  keys: CreatedKeys;
}

export interface ReloadResult {
  ok: boolean;
  errors?: string[];
}

type Handler = (event: H3Event) => Promise<Response | typeof HANDLED>;

export interface Runtime {
  config: Config;
  router: ChannelRouter;
  routes: {
    chat: Handler;
    embeddings: Handler;
    models: Handler;
    model: Handler;
    usage: Handler;
    shareInit: (e: H3Event) => Promise<unknown>;
    shareChats: (e: H3Event) => Promise<unknown>;
    shareChat: (e: H3Event) => Promise<unknown>;
    sharePage: (e: H3Event) => Response;
    adminChannels: Handler;
    adminReload: Handler;
    adminKeyCreate: Handler;
    adminKeyList: Handler;
    adminKeyRevoke: Handler;
  };
}

export function buildRuntime(config: Config, shared: Shared, previous?: Runtime): Runtime {
  // 1. Lookups from the config.
  const models = new Map(config.llmModels.map((m) => [m.model, m]));
  const vectorModels = new Map(config.vectorModels.map((m) => [m.model, m]));
  const apps = new Map(config.apps.map((a) => [a.id, a]));
  const links = new Map(config.shareLinks.map((l) => [l.shareId, l]));
  const keyring = createKeyring(config.apiKeys, shared.keys);
  const router = createChannelRouter(config.channels, shared.observer, shared.state, { previous: previous?.router.entries });

  // 2. The handlers, each bound to this runtime's lookups.
  const bodyLimits = { maxBytes: config.server.bodyLimitBytes, maxDepth: config.server.maxJsonDepth };
  const readJson = (event: H3Event) => readJsonBody(event, bodyLimits);
  // what chat and embeddings both need: keys, apps, channels, budgets, listeners, the store
  const pipeline = {
    body: bodyLimits,
    inflight: shared.inflight,
    maxAttempts: config.routing.maxAttempts,
    apps,
    keyring,
    router,
    quota: shared.quota,
    observer: shared.observer,
    store: shared.store,
    resolveShareLink: (shareId: unknown, now: number) => resolveShareLink(links, shareId, now),
  };
  const chat = createChatHandler({ ...pipeline, models, shareAuth: shared.shareAuth });
  const embeddings = createEmbeddingsHandler({ ...pipeline, vectorModels });
  const share = createShareRoutes({ links, apps, store: shared.store, auth: shared.shareAuth, readJson, page: config.server.sharePage });
  const admin = createAdminRoutes({ keyring, models, apps, store: shared.store, router, reload: shared.reload });
  const keys = createKeyRoutes({ keyring, apps, keys: shared.keys, readJson });

  return {
    config,
    router,
    routes: {
      chat,
      embeddings,
      models: admin.models,
      model: admin.model,
      usage: admin.usage,
      shareInit: share.init,
      shareChats: share.chats,
      shareChat: share.chat,
      sharePage: share.page,
      adminChannels: admin.channels,
      adminReload: admin.reload,
      adminKeyCreate: keys.create,
      adminKeyList: keys.list,
      adminKeyRevoke: keys.revoke,
    },
  };
}
