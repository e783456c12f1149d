// What one config builds: lookups, keys, the channel router and the route handlers that read them.
// A reload builds a new one beside the old (docs/operations.md#reload): requests in flight keep the
// runtime they started with; the router hands unchanged channels (their pools, gates and state) to
// the new one.
import type { H3Event } from "h3";
import { createKeyRoutes } from "./admin/keys.js";
import { createAdminRoutes, type ReloadResult } from "./admin/routes.js";
import type { ChannelBook, EffectiveChannels } from "./upstream/channel-book.js";
import { createAiproxyRoutes } from "./aiproxy/routes.js";
import type { CreatedKeys } from "./auth/created-keys.js";
import { createKeyring, type Keyring } from "./auth/keys.js";
import type { StandIns } from "./auth/stand-ins.js";
import { createCatalogRoutes } from "./catalog/routes.js";
import { createDialectSpec } from "./chat/dialect-spec.js";
import { createChatSpec } from "./chat/spec.js";
import { createCompletionsSpec } from "./completions/spec.js";
import { consoleAsset, consolePage } from "./console/assets.js";
import { fleetLookups, modelKinds } from "./config/fleet.js";
import { createEchoChannel } from "./demo/echo-channel.js";
import { upstreamChannels } from "./upstream/channels.js";
import { createCountTokensSpec } from "./dialects/anthropic/count-route.js";
import { createAnthropicDialect } from "./dialects/anthropic/dialect.js";
import { createResponseRoutes, createResponsesDialect } from "./dialects/responses/index.js";
import type { ClusterState } from "./cluster/types.js";
import type { Config } from "./config/schema.js";
import { createEmbeddingsSpec } from "./embeddings/spec.js";
import { createSpeechSpec } from "./audio/speech-spec.js";
import { createTranscriptionSpec } from "./audio/transcription-spec.js";
import { UploadSlots } from "./audio/upload-slots.js";
import { createRerankSpec } from "./rerank/spec.js";
import { readJsonBody, SMALL_BODY_BYTES } from "./http/body.js";
import type { Inflight } from "./http/inflight.js";
import { jsonResponse } from "./http/json.js";
import type { Reply } from "./http/node.js";
import { createAliases } from "./metered/models.js";
import { createRedactor } from "./metered/body-redact.js";
import { runMetered, type MeteredDeps } from "./metered/pipeline.js";
import { runLocal } from "./metered/local.js";
import { bodyTap } from "./metered/body-capture.js";
import { callInMemory, type CallAnswer, type CallInput } from "./metered/memory-call.js";
import type { Tap } from "./metered/taps.js";
import type { ChannelLayer } from "./upstream/layers.js";
import { traceLayer } from "./upstream/trace-layer.js";
import { traceTap } from "./metered/trace-tap.js";
import type { Quota } from "./metered/quota.js";
import type { Observer } from "./observability/observer.js";
import type { ShareAuth } from "./share/callbacks.js";
import { resolveShareLink } from "./share/links.js";
import { shareWindowScriptResponse } from "./share/page.js";
import { createShareRoutes } from "./share/routes.js";
import type { Store } from "./store/types.js";
import type { AddressGuard } from "./upstream/address-guard.js";
import { createChannelRouter, type ChannelRouter } from "./upstream/router.js";
import { createUsageRoute } from "./usage/route.js";
import { createBatchHandlers } from "./batches/handlers.js";

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
  /** wakes the batch runner: a batch was created or cancelled (docs/batches.md) */
  wakeBatches: () => void;
  /** stand-in tokens a batch line runs with, as the key that created its batch (src/auth/stand-ins.ts) */
  standIns: StandIns;
  /** channels written through FastGPT's AI Proxy API, over config.json's */
  channels: ChannelBook;
  /** builds the runtime again over the same config.json (after a channel write) */
  rebuild: () => void;
  /** what time it is for quotas by time and key expiry (tests inject one) */
  clock: () => number;
  /** where channels may connect (docs/configuration.md#top-level `allowLinkLocalChannels`) */
  guard: AddressGuard;
  /** told of every metered request at the pipeline's fixed points, before the body tap (docs/architecture.md#taps) */
  taps?: readonly Tap[];
  /** layers for every OpenAI-compatible channel, between the status layer and the gate (docs/architecture.md#channel-layers) */
  layers?: readonly ChannelLayer[];
}

export type Handler = (event: H3Event) => Promise<Reply>;

/** A metered kind called in the process, answered in memory (src/metered/memory-call.ts). */
export type InMemoryCall = (input: CallInput) => Promise<CallAnswer>;
/** The kinds a call in the process may be (a batch line's `url`). */
export type CallKind = keyof ReturnType<typeof buildRuntime>["calls"];

/** Every route handler of a runtime, by name (the route table in src/routes.ts names them): the
 *  names are those `buildRuntime` gives its handlers. */
export type Handlers = ReturnType<typeof buildRuntime>["handlers"];

export interface Runtime {
  /** config.json's, with the channels the store writes over them (docs/fastgpt.md#channels) */
  config: Config;
  /** what the AI Proxy API says of each channel besides its config */
  channels: EffectiveChannels;
  router: ChannelRouter;
  handlers: Record<keyof Handlers, Handler>;
  calls: Record<CallKind, InMemoryCall>;
  /** the keys of this config (and those created through the API): the route table's access is judged with it */
  keyring: Keyring;
  /** transcription uploads in flight: counted across reloads */
  uploads: UploadSlots;
}

/** Every secret the config holds, kept out of logged bodies (docs/fastgpt.md#bodies). */
function configSecrets(config: Config): string[] {
  const secrets = [...config.apiKeys.map((k) => k.key), ...config.channels.map((c) => c.key), ...config.reRankModels.map((m) => m.requestAuth), config.server.metricsToken];
  return secrets.filter((s): s is string => typeof s === "string" && s.length >= 6);
}

export function buildRuntime(file: Config, shared: Shared, previous?: Pick<Runtime, "router" | "uploads">) {
  // 1. Lookups from the config, its channels as the store has them.
  const channels = shared.channels.effective(file);
  const config: Config = { ...file, channels: channels.channels };
  const fleet = fleetLookups(config);
  const models = fleet.chat;
  const kinds = modelKinds(config);
  const apps = new Map(config.apps.map((a) => [a.id, a]));
  const links = new Map(config.shareLinks.map((l) => [l.shareId, l]));
  const aliases = createAliases(config.aliases);
  const keyring = createKeyring(config.apiKeys, shared.keys, shared.clock, shared.standIns);
  // rerank models with their own requestUrl get a channel of their own (docs/fleet.md#rerank)
  const router = createChannelRouter(upstreamChannels(config), shared.observer, shared.state, {
    previous: previous?.router.entries,
    clientFor: (channel) => (channel.type === "echo" ? createEchoChannel(channel) : undefined),
    enabled: shared.channels.enabled,
    affinity: config.routing.affinity,
    spillLoad: config.routing.spillLoad,
    guard: shared.guard,
    // every post names its attempt's span, or passes on the client's traceparent (docs/tracing.md#propagation)
    layers: [...(shared.layers ?? []), traceLayer],
    prefix: config.routing.prefix,
    imbalance: config.routing.imbalance,
    prefixes: previous?.router.prefixes,
  });

  // 2. The metered kinds: specs of the one pipeline, over what every one of them needs.
  const body = { maxBytes: config.server.bodyLimitBytes, maxDepth: config.server.maxJsonDepth };
  // the dialects' own limit applies to them only, never to chat or the share routes (docs/configuration.md#server)
  const dialectBody = { ...body, maxBytes: config.server.dialectBodyLimitBytes ?? body.maxBytes };
  const bodyLog = {
    store: shared.store,
    redact: createRedactor(configSecrets(config)),
    maxBytes: config.server.bodyLog.maxBytes,
    retentionMs: config.server.bodyLog.retentionHours * 3_600_000,
  };
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
    state: shared.state,
    resolveShareLink: (shareId: unknown, now: number) => resolveShareLink(links, shareId, now),
    taps: [...(shared.taps ?? []), traceTap, bodyTap(bodyLog, config.apps)],
    timezone: config.server.timezone,
    clock: shared.clock,
  };
  const dialectMetered: MeteredDeps = { ...metered, body: dialectBody };
  // a configured model whose channels were all deleted through the AI Proxy API is still the
  // config's: 503 model_unavailable until a channel serves it, not 404 (docs/fastgpt.md#channels)
  const serves = (model: string) => router.serves(model) || kinds.has(model);
  const chatDeps = { models, aliases, serves, store: shared.store, shareAuth: shared.shareAuth, maxBytes: body.maxBytes, maxTurnBytes: config.server.maxTurnBytes };
  const chat = createChatSpec(chatDeps);
  const embeddings = createEmbeddingsSpec({ vectorModels: fleet.embeddings, aliases, serves });
  // message threads are kept as stored responses are, with their own time to live (docs/claude-code.md#message-threads)
  const threads = { store: shared.store, limits: config.responses, ttlHours: config.dialects.threadTtlHours, clock: shared.clock };
  const messages = createDialectSpec(chatDeps, createAnthropicDialect(threads));
  const responses = createDialectSpec(chatDeps, createResponsesDialect({ store: shared.store, limits: config.responses }));
  const storedResponses = createResponseRoutes({ keyring, apps, store: shared.store });
  const rerank = createRerankSpec({ rerankModels: fleet.rerank, aliases, serves });
  const speech = createSpeechSpec({ speechModels: fleet.speech, aliases, serves });
  const { server } = config;
  const uploadLimits = { total: server.audioMaxUploads, perKey: server.audioMaxUploadsPerKey };
  const uploads = previous?.uploads ?? new UploadSlots(uploadLimits);
  uploads.limits = uploadLimits;
  const transcription = createTranscriptionSpec({
    sttModels: fleet.transcription,
    aliases,
    serves,
    limitBytes: server.audioLimitBytes,
    spoolDir: server.audioSpoolDir,
    bodyTimeoutMs: server.bodyTimeoutMs,
    slots: uploads,
  });
  const completions = createCompletionsSpec({ models, aliases, serves });

  // 3. The other routes.
  // the share and admin routes take a few fields: a small limit of their own
  const smallBody = { ...body, maxBytes: Math.min(SMALL_BODY_BYTES, body.maxBytes) };
  const readJson = (event: H3Event) => readJsonBody(event, smallBody);
  const share = createShareRoutes({ links, apps, store: shared.store, auth: shared.shareAuth, state: shared.state, server: config.server, page: config.server.sharePage });
  const countTokens = createCountTokensSpec({ models, aliases, serves, threads });
  // the share API's callers are named in its bodies: no key (docs/api.md#the-share-api)
  const shareMetered = { ...metered, body: smallBody };
  const shareCall = (call: (event: H3Event, body: unknown) => Promise<unknown>) => async (event: H3Event) =>
    jsonResponse(await runLocal(event, shareMetered, { what: "Share", credential: false, parse: ({ body }) => body, answer: ({ req }) => call(event, req) }));
  const catalog = createCatalogRoutes({ keyring, config, kinds, aliases, apps });
  const admin = createAdminRoutes({ keyring, router, reload: shared.reload, channels: shared.channels, configured: new Set(file.channels.map((c) => c.name)), rebuild: shared.rebuild });
  const keys = createKeyRoutes({ keyring, apps, keys: shared.keys, readJson });
  const aiproxy = createAiproxyRoutes({
    keyring,
    router,
    book: shared.channels,
    file,
    channels,
    config,
    kinds,
    writable: config.channelWrites,
    readJson,
    rebuild: shared.rebuild,
    configured: (model) => kinds.has(model),
    guard: shared.guard,
    store: shared.store,
    timezone: config.server.timezone,
    observer: shared.observer,
  });

  const batches = createBatchHandlers({
    store: shared.store.batches,
    config: config.batches,
    clock: shared.clock,
    caller: { keyring, apps, resolveShareLink: metered.resolveShareLink, timezone: config.server.timezone },
    quota: shared.quota,
    models: { chat: models, embeddings: fleet.embeddings, aliases, apps, serves },
    wake: shared.wakeBatches,
  });

  return {
    config,
    channels,
    router,
    uploads,
    keyring,
    // the metered kinds called with no HTTP request (a batch line): answered in memory (docs/architecture.md#calls)
    calls: {
      chat: (input) => callInMemory(input, metered, chat),
      embeddings: (input) => callInMemory(input, metered, embeddings),
      completions: (input) => callInMemory(input, metered, completions),
      responses: (input) => callInMemory(input, dialectMetered, responses),
      messages: (input) => callInMemory(input, dialectMetered, messages),
      rerank: (input) => callInMemory(input, metered, rerank),
    } satisfies Record<string, InMemoryCall>,
    handlers: {
      chat: (e) => runMetered(e, metered, chat),
      embeddings: (e) => runMetered(e, metered, embeddings),
      messages: (e) => runMetered(e, dialectMetered, messages),
      countTokens: (e) => runLocal(e, dialectMetered, countTokens),
      responses: (e) => runMetered(e, dialectMetered, responses),
      rerank: (e) => runMetered(e, metered, rerank),
      speech: (e) => runMetered(e, metered, speech),
      transcription: (e) => runMetered(e, metered, transcription),
      completions: (e) => runMetered(e, metered, completions),
      responseGet: storedResponses.get,
      responseDelete: storedResponses.delete,
      models: catalog.models,
      model: catalog.model,
      usage: createUsageRoute({ keyring, apps, store: shared.store, kinds, timezone: config.server.timezone }),
      shareInit: shareCall(share.init),
      shareChats: shareCall(share.chats),
      shareChat: shareCall(share.chat),
      sharePage: async (e) => share.page(e),
      shareScript: async (e) => shareWindowScriptResponse(e.req.headers.get("if-none-match")),
      consolePage: async () => consolePage(),
      consoleAsset: async (e) => consoleAsset(e.url.pathname, e.req.headers.get("if-none-match")),
      adminChannels: admin.channels,
      adminReload: admin.reload,
      adminChannelOverride: admin.dropOverride,
      adminKeyCreate: keys.create,
      adminKeyList: keys.list,
      adminKeyRevoke: keys.revoke,
      aiproxyChannelsAll: aiproxy.all,
      aiproxyChannels: aiproxy.list,
      aiproxyTypeMetas: aiproxy.typeMetas,
      aiproxyChannel: aiproxy.one,
      aiproxyChannelCreate: aiproxy.create,
      aiproxyChannelUpdate: aiproxy.update,
      aiproxyChannelDelete: aiproxy.remove,
      aiproxyChannelsDelete: aiproxy.batchRemove,
      aiproxyChannelStatus: aiproxy.status,
      aiproxyChannelsStatus: aiproxy.batchStatus,
      aiproxyChannelTest: aiproxy.test,
      aiproxyLogs: aiproxy.logs,
      aiproxyLogDetail: aiproxy.logDetail,
      aiproxyDashboard: aiproxy.dashboard,
      aiproxyMember: aiproxy.member,
      aiproxyUnknown: aiproxy.unknown,
      ...batches,
    } satisfies Record<string, Handler>,
  };
}
