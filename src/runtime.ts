// What one config builds: lookups, keys, the channel router and the route handlers that read them.
// A reload builds a new one beside the old (docs/operations.md#reload): requests in flight keep the
// runtime they started with; the router hands unchanged channels (their pools, gates and state) to
// the new one.
import type { H3Event } from "h3";
import { createKeyRoutes } from "./admin/keys.js";
import { createAdminRoutes, type ReloadResult } from "./admin/routes.js";
import type { CreatedKeys } from "./auth/created-keys.js";
import { createKeyring } from "./auth/keys.js";
import { createCatalogRoutes } from "./catalog/routes.js";
import { createDialectSpec } from "./chat/dialect-spec.js";
import { createChatSpec } from "./chat/spec.js";
import { createCompletionsSpec } from "./completions/spec.js";
import { modelKinds, sttModels, upstreamChannels } from "./config/fleet.js";
import { createCountTokensRoute } from "./dialects/anthropic/count-route.js";
import { anthropicDialect } from "./dialects/anthropic/dialect.js";
import { createResponseRoutes, createResponsesDialect } from "./dialects/responses/index.js";
import type { ClusterState } from "./cluster/types.js";
import type { Config } from "./config/schema.js";
import { createEmbeddingsSpec } from "./embeddings/spec.js";
import { createSpeechSpec } from "./audio/speech-spec.js";
import { createTranscriptionSpec } from "./audio/transcription-spec.js";
import { createRerankSpec } from "./rerank/spec.js";
import { readJsonBody } from "./http/body.js";
import type { Inflight } from "./http/inflight.js";
import { jsonResponse } from "./http/json.js";
import type { Reply } from "./http/node.js";
import { createAliases } from "./metered/models.js";
import { runMetered, type MeteredDeps } from "./metered/pipeline.js";
import type { Quota } from "./metered/quota.js";
import type { Observer } from "./observability/observer.js";
import type { ShareAuth } from "./share/callbacks.js";
import { resolveShareLink } from "./share/links.js";
import { shareWindowScriptResponse } from "./share/page.js";
import { createShareRoutes } from "./share/routes.js";
import type { Store } from "./store/types.js";
import { createChannelRouter, type ChannelRouter } from "./upstream/router.js";
import { createUsageRoute } from "./usage/route.js";

export type { ReloadResult };

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
  /** what time it is for quotas by time and key expiry (tests inject one) */
  clock: () => number;
}

export type Handler = (event: H3Event) => Promise<Reply>;

/** Every route handler of a runtime, by name (the route table in src/routes.ts names them). */
export type Handlers = Record<
  | "chat"
  | "embeddings"
  | "messages"
  | "countTokens"
  | "responses"
  | "rerank"
  | "speech"
  | "transcription"
  | "completions"
  | "responseGet"
  | "responseDelete"
  | "models"
  | "model"
  | "usage"
  | "shareInit"
  | "shareChats"
  | "shareChat"
  | "sharePage"
  | "shareScript"
  | "adminChannels"
  | "adminReload"
  | "adminKeyCreate"
  | "adminKeyList"
  | "adminKeyRevoke",
  Handler
>;

export interface Runtime {
  config: Config;
  router: ChannelRouter;
  handlers: Handlers;
}

export function buildRuntime(config: Config, shared: Shared, previous?: Runtime): Runtime {
  // 1. Lookups from the config.
  const models = new Map(config.llmModels.map((m) => [m.model, m]));
  const vectorModels = new Map(config.vectorModels.map((m) => [m.model, m]));
  const rerankModels = new Map(config.reRankModels.map((m) => [m.model, m]));
  const speechModels = new Map(config.audioSpeechModels.map((m) => [m.model, m]));
  const transcriptionModels = new Map(sttModels(config).map((m) => [m.model, m]));
  const kinds = modelKinds(config);
  const apps = new Map(config.apps.map((a) => [a.id, a]));
  const links = new Map(config.shareLinks.map((l) => [l.shareId, l]));
  const aliases = createAliases(config.aliases);
  const keyring = createKeyring(config.apiKeys, shared.keys, shared.clock);
  // rerank models with their own requestUrl get a channel of their own (docs/fleet.md#rerank)
  const router = createChannelRouter(upstreamChannels(config), shared.observer, shared.state, { previous: previous?.router.entries });

  // 2. The metered kinds: specs of the one pipeline, over what every one of them needs.
  const body = { maxBytes: config.server.bodyLimitBytes, maxDepth: config.server.maxJsonDepth };
  const metered: MeteredDeps = {
    body,
    inflight: shared.inflight,
    maxAttempts: config.routing.maxAttempts,
    trustProxy: config.server.trustProxy,
    apps,
    keyring,
    router,
    quota: shared.quota,
    observer: shared.observer,
    store: shared.store,
    resolveShareLink: (shareId: unknown, now: number) => resolveShareLink(links, shareId, now),
    timezone: config.server.timezone,
    clock: shared.clock,
  };
  const serves = router.serves;
  const chatDeps = { models, aliases, serves, store: shared.store, shareAuth: shared.shareAuth, maxBytes: body.maxBytes, maxTurnBytes: config.server.maxTurnBytes };
  const chat = createChatSpec(chatDeps);
  const embeddings = createEmbeddingsSpec({ vectorModels, aliases, serves });
  const messages = createDialectSpec(chatDeps, anthropicDialect);
  const responses = createDialectSpec(chatDeps, createResponsesDialect({ store: shared.store, retentionDays: config.responses.retentionDays, maxStoredBytes: body.maxBytes }));
  const storedResponses = createResponseRoutes({ keyring, store: shared.store });
  const rerank = createRerankSpec({ rerankModels, aliases, serves });
  const speech = createSpeechSpec({ speechModels, aliases, serves });
  const transcription = createTranscriptionSpec({ sttModels: transcriptionModels, aliases, serves, limitBytes: config.server.audioLimitBytes, spoolDir: config.server.audioSpoolDir });
  const completions = createCompletionsSpec({ models, aliases, serves });

  // 3. The other routes.
  const readJson = (event: H3Event) => readJsonBody(event, body);
  const share = createShareRoutes({ links, apps, store: shared.store, auth: shared.shareAuth, readJson, state: shared.state, server: config.server, page: config.server.sharePage });
  const catalog = createCatalogRoutes({ keyring, config, kinds, aliases, apps });
  const admin = createAdminRoutes({ keyring, router, reload: shared.reload });
  const keys = createKeyRoutes({ keyring, apps, keys: shared.keys, readJson });

  return {
    config,
    router,
    handlers: {
      chat: (e) => runMetered(e, metered, chat),
      embeddings: (e) => runMetered(e, metered, embeddings),
      messages: (e) => runMetered(e, metered, messages),
      countTokens: createCountTokensRoute({ ...metered, models, aliases, serves }),
      responses: (e) => runMetered(e, metered, responses),
      rerank: (e) => runMetered(e, metered, rerank),
      speech: (e) => runMetered(e, metered, speech),
      transcription: (e) => runMetered(e, metered, transcription),
      completions: (e) => runMetered(e, metered, completions),
      responseGet: storedResponses.get,
      responseDelete: storedResponses.delete,
      models: catalog.models,
      model: catalog.model,
      usage: createUsageRoute({ keyring, apps, store: shared.store, kinds, timezone: config.server.timezone }),
      shareInit: async (e) => jsonResponse(await share.init(e)),
      shareChats: async (e) => jsonResponse(await share.chats(e)),
      shareChat: async (e) => jsonResponse(await share.chat(e)),
      sharePage: async (e) => share.page(e),
      shareScript: async (e) => shareWindowScriptResponse(e.req.headers.get("if-none-match")),
      adminChannels: admin.channels,
      adminReload: admin.reload,
      adminKeyCreate: keys.create,
      adminKeyList: keys.list,
      adminKeyRevoke: keys.revoke,
    },
  };
}
