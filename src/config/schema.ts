// The one zod schema for config.json (docs/configuration.md). Defaults live here and nowhere else. Every
// object is strict: a typo must be a start-up error, never a silently dropped key or limit.
import { tracingSchema } from "../tracing/config.js";
import { z } from "zod";
import { checkReferences } from "./references.js";
import { batchesSchema } from "./batches-schema.js";
import { routingSchema } from "./routing-schema.js";

const MIB = 1024 * 1024;
/** `*`, or a browser origin: scheme, host and port only (an Origin header never has a path). */
const ORIGIN = /^(\*|https?:\/\/[^/\s?#]+)$/;
/** A CSP frame-ancestors source: 'self', 'none', or an origin (scheme, host or *.host, port). */
const FRAME_SOURCE = /^('self'|'none'|https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?)$/;

const name = z.string().min(1);
const points = z.number().min(-1).default(-1); // -1 = no limit
const qpm = z.number().int().min(0).default(0); // 0 = no limit
/** Scheduling (docs/routing.md#priority-and-fairness): higher first; a key or link without one has its app's. */
const priority = z.number().int().min(-1000).max(1000);
/** calls in flight at once, across instances (0 = no limit) */
const maxConcurrent = z.number().int().min(0).default(0);
/** Quotas by time on apps, keys and share links (docs/configuration.md#quotas-by-time). */
const timeQuotas = {
  /** tokens (prompt + completion) a minute; 0 = no limit */
  tpm: z.number().int().min(0).default(0),
  /** points a calendar `period` in server.timezone; -1 = no limit */
  periodPoints: points,
  period: z.enum(["day", "week", "month"]).default("day"),
};
/** An IANA time zone name that this Node knows (`UTC`, `Europe/Berlin`). */
export const timeZone = z.string().refine((tz) => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}, "expected an IANA time zone name such as \"UTC\" or \"Europe/Berlin\"");

/** A client key: exactly one of the plain value (or `${ENV}`) or its sha256 hex digest. */
const apiKeySchema = z
  .strictObject({
    name,
    kind: z.enum(["global", "app", "admin"]),
    appId: z.string().min(1).optional(),
    key: z.string().min(8, "a key needs at least 8 characters").optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "expected 64 hex digits")
      .optional(),
    maxUsagePoints: points,
    qpm,
    priority: priority.optional(),
    maxConcurrent,
    ...timeQuotas,
    /** after this instant the key is refused with 401 key_expired */
    expiresAt: z.iso.datetime({ offset: true }).nullable().default(null),
  })
  .superRefine((k, ctx) => {
    if ((k.key === undefined) === (k.sha256 === undefined))
      ctx.addIssue({ code: "custom", message: "give exactly one of key or sha256", path: ["key"] });
    if (k.kind === "app" && !k.appId) ctx.addIssue({ code: "custom", message: "an app key needs appId", path: ["appId"] });
    // an admin key may serve one app's model calls: FastGPT's AI Proxy token (docs/fastgpt.md#model-calls)
    if (k.kind === "global" && k.appId) ctx.addIssue({ code: "custom", message: `a ${k.kind} key carries no appId`, path: ["appId"] });
  });

export const channelSchema = z.strictObject({
  name,
  /** FastGPT's AI Proxy API names channels by number (docs/fastgpt.md#channels); absent: the store assigns one */
  id: z.number().int().positive().optional(),
  /** the name each of its models has on this model server (aiproxy's model_mapping) */
  modelMapping: z.record(name, name).default({}),
  /** `openai`: an OpenAI-compatible upstream; `echo`: answers locally (demo and tests). */
  type: z.enum(["openai", "echo"]).default("openai"),
  baseUrl: z.url({ protocol: /^https?$/ }).default("http://127.0.0.1:6006"),
  key: z.string().default(""),
  models: z.array(name).min(1),
  weight: z.number().int().min(1).default(1),
  priority: z.number().int().default(0),
  /** Time allowed until the upstream's response headers arrive (a long prompt on a busy GPU is slow). */
  firstByteTimeoutMs: z.number().int().positive().default(120_000),
  /** Time allowed between two chunks of a streamed answer. */
  idleTimeoutMs: z.number().int().positive().default(60_000),
  /** Pooled connections kept open to this upstream. */
  connections: z.number().int().positive().default(128),
  /** Time allowed for a whole answer, from the call to its last byte. */
  totalTimeoutMs: z.number().int().positive().default(600_000),
  /** Requests that may wait for a free connection, and for how long. */
  maxQueue: z.number().int().nonnegative().default(1024),
  queueTimeoutMs: z.number().int().positive().default(10_000),
  /** An upstream answer larger than this is cut with an error. */
  maxAnswerBytes: z.number().int().positive().default(16 * MIB),
  /** The engine's Prometheus text (vLLM, SGLang), read every intervalMs for its queue and KV cache
   *  (docs/routing.md#load); `"auto"` = `{baseUrl}/metrics`. Off when absent. */
  engineMetrics: z
    .strictObject({
      url: z.union([z.literal("auto"), z.url({ protocol: /^https?$/ })]),
      intervalMs: z.number().int().min(100).default(1_000),
    })
    .optional(),
  /** `GET {baseUrl}/v1/models` every intervalMs (0 = off) with the channel key. */
  healthCheck: z
    .strictObject({
      intervalMs: z.number().int().nonnegative().default(15_000),
      timeoutMs: z.number().int().positive().default(5_000),
    })
    .prefault({}),
  /** The most calls in flight on this channel from this instance (0 = `connections`): the rest wait
   *  in the gateway's queue, ordered by priority and fair across apps (docs/routing.md#priority-and-fairness). */
  concurrency: z.number().int().nonnegative().default(0),
  /** Write the caller's priority into the upstream body as vLLM's `priority` (its negation). */
  forwardPriority: z.boolean().default(false),
  /** Tokens the replica's prefix cache holds, bounding its prefix index where its engine does not say
   *  (docs/routing.md#prefix). */
  cacheTokens: z.number().int().positive().default(262_144),
  /** The channel is itself a router over replicas (llm-d, vLLM router, SGLang gateway): no prefix or
   *  session pick among such channels, and the session, app and priority go to it as headers. */
  upstreamRouter: z.boolean().default(false),
});

const modelSchema = z.strictObject({
  model: name,
  name: z.string().optional(),
  maxContext: z.number().int().positive().default(8000),
  maxResponse: z.number().int().positive().default(4000),
  quoteMaxToken: z.number().int().nonnegative().default(2000),
  maxTemperature: z.number().nonnegative().default(1.2),
  vision: z.boolean().default(false),
  // issue 27: parts that are not text cost a declared worst case (docs/configuration.md#llmmodels)
  /** the most tokens one image may take: its worst case in the budget hold and the context check */
  maxImageTokens: z.number().int().nonnegative().default(1536),
  /** accepts `input_audio` parts, each taking at most `maxAudioTokens` */
  audioInput: z.boolean().default(false),
  maxAudioTokens: z.number().int().nonnegative().default(4096),
  /** accepts `file` parts, each taking at most `maxFileTokens` */
  fileInput: z.boolean().default(false),
  maxFileTokens: z.number().int().nonnegative().default(8192),
  defaultSystemChatPrompt: z.string().default(""),
  inputPrice: z.number().nonnegative().default(0),
  /** the price of input tokens the upstream served from its prefix cache (default: inputPrice) */
  cachedInputPrice: z.number().nonnegative().optional(),
  outputPrice: z.number().nonnegative().default(0),
  charsPointsPrice: z.number().nonnegative().default(0),
  tokenizer: z.enum(["cl100k_base", "o200k_base"]).default("cl100k_base"),
  /** also served on the legacy `POST /v1/completions` (autocomplete and FIM tools) */
  completions: z.boolean().default(false),
  /** the most choices (`n`) a key's request may ask for; share-link users always get one */
  maxChoices: z.number().int().min(1).max(128).default(4),
  /** vendor sampling fields (beyond OpenAI's) that reach this model: top_k, min_p, … */
  passThrough: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, "expected a field name")).default([]),
});

/** An embedding model, with FastGPT's field names (docs/configuration.md#vectormodels). */
const vectorModelSchema = z.strictObject({
  model: name,
  name: z.string().optional(),
  /** the most tokens one input may have (400 above) */
  maxToken: z.number().int().positive().default(3000),
  /** FastGPT's chunk size for knowledge bases: kept, not used by the gateway */
  defaultToken: z.number().int().positive().default(700),
  /** FastGPT's search weight: kept, not used by the gateway */
  weight: z.number().nonnegative().optional(),
  inputPrice: z.number().nonnegative().default(0),
  charsPointsPrice: z.number().nonnegative().default(0),
});

/** A rerank model (FastGPT's `reRankModels`, docs/fleet.md#rerank): served by the channels that list
 *  it, or, with `requestUrl`, by that URL alone with `requestAuth` as its bearer key. */
const reRankModelSchema = z.strictObject({
  model: name,
  name: z.string().optional(),
  charsPointsPrice: z.number().nonnegative().default(0),
  /** the rerank endpoint's whole URL (FastGPT: `{{host}}/v1/rerank`) */
  requestUrl: z.url({ protocol: /^https?$/ }).optional(),
  requestAuth: z.string().optional(),
  /** the most documents one request may rank (400 above) */
  maxDocuments: z.number().int().positive().default(1000),
});

/** A text-to-speech model (FastGPT's `audioSpeechModels`). `bufferId` is FastGPT's cache key: kept, unused. */
const audioSpeechModelSchema = z.strictObject({
  model: name,
  name: z.string().optional(),
  charsPointsPrice: z.number().nonnegative().default(0),
  /** when any are listed, a request's `voice` must be one of their values */
  voices: z.array(z.strictObject({ label: z.string(), value: z.string().min(1), bufferId: z.string().optional() })).default([]),
});

/** A speech-to-text model (FastGPT's `whisperModel`, or one of `sttModels`); priced per minute of audio. */
const sttModelSchema = z.strictObject({
  model: name,
  name: z.string().optional(),
  charsPointsPrice: z.number().nonnegative().default(0),
});

const appSchema = z.strictObject({
  id: name,
  name: z.string().optional(),
  model: name,
  models: z.array(name).optional(),
  systemPrompt: z.string().default(""),
  temperature: z.number().nonnegative().optional(),
  maxToken: z.number().int().positive().optional(),
  history: z.number().int().min(0).default(6),
  /** true: every key of the app reads and continues every chat of the app; false: a chat is its creator's */
  sharedChats: z.boolean().default(false),
  maxUsagePoints: points,
  qpm,
  priority: priority.default(0),
  maxConcurrent,
  /** what FastGPT's log detail shows of this app's calls: their bodies, redacted (docs/fastgpt.md#bodies) */
  logBodies: z.enum(["off", "errors", "all"]).default("off"),
  ...timeQuotas,
});

const shareLinkSchema = z.strictObject({
  shareId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, _ and - only"),
  appId: name,
  authHost: z.url({ protocol: /^https?$/ }).optional(),
  qpm,
  maxUsagePoints: points,
  ...timeQuotas,
  expiresAt: z.iso.datetime({ offset: true }).nullable().default(null),
  responseDetail: z.boolean().default(false),
  callbackTimeoutMs: z.number().int().positive().default(5_000),
  /** Calls a minute to /api/share/init|chats|chat for this link, all its users together (0 = no limit). */
  apiQpm: z.number().int().min(0).default(600),
  priority: priority.optional(),
  /** per user of the link (absent: 0, no limit) */
  maxConcurrent: maxConcurrent.optional(),
});

const serverSchema = z.strictObject({
  port: z.number().int().min(0).max(65535).default(3000),
  host: z.string().default("127.0.0.1"),
  bodyLimitBytes: z.number().int().positive().default(2 * MIB),
  /** The Messages and Responses routes' body limit (an agent resends its whole conversation); absent:
   *  bodyLimitBytes. Chat and every other route keep bodyLimitBytes (docs/configuration.md#server). */
  dialectBodyLimitBytes: z.number().int().positive().optional(),
  /** a stored conversation turn longer than this is stored cut (and marked) */
  maxTurnBytes: z.number().int().min(1024).default(256 * 1024),
  metricsToken: z.string().optional(),
  headersTimeoutMs: z.number().int().positive().default(10_000),
  /** Time allowed for the whole request body. */
  bodyTimeoutMs: z.number().int().positive().default(30_000),
  /** Time requests in flight get to finish on SIGTERM: 25 s, so a gateway exits within the 30 s a
   *  Kubernetes pod is given by default (docs/operations.md#shutdown). */
  shutdownTimeoutMs: z.number().int().nonnegative().default(25_000),
  maxJsonDepth: z.number().int().positive().default(64),
  log: z
    .strictObject({
      level: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
      /** `stdout`, `stderr`, or a file path that lines are appended to. */
      destination: z.string().default("stdout"),
    })
    .prefault({}),
  /** Origins whose pages may call /v1/* and /api/v1/* from a browser; `[]` turns CORS off. The
   *  default `["*"]` lets any page read the answers to the calls it can make: list your apps'
   *  origins where share links without authHost are reachable (docs/configuration.md#cors). */
  cors: z
    .strictObject({
      origins: z.array(z.string().regex(ORIGIN, 'expected "*" or an origin such as https://app.example.com')).default(() => ["*"]),
    })
    .prefault({}),
  /** The largest audio file a transcription request may upload (413 past it, the upload cut short). */
  audioLimitBytes: z.number().int().positive().default(25 * MIB),
  /** Where audio uploads are spooled while their request runs (default: the OS's temporary directory). */
  audioSpoolDir: z.string().min(1).optional(),
  /** Transcription uploads in flight at once, all keys together (503 past it) and per key (429). */
  audioMaxUploads: z.number().int().positive().default(32),
  audioMaxUploadsPerKey: z.number().int().positive().default(8),
  /** Proxies in front of the gateway whose X-Forwarded-For entry names the client (1 behind one
   *  nginx); 0 takes the socket's address. The gateway must then be reachable through them only. */
  trustProxy: z.number().int().min(0).default(0),
  /** Calls a minute to /api/share/init|chats|chat from one client address, all links together (0 = no limit). */
  shareApiQpm: z.number().int().min(0).default(60),
  /** The IANA time zone of period budgets' days, weeks (from Monday) and months. */
  timezone: timeZone.default("UTC"),
  /** Processes serving the port (one is the primary when more). */
  workers: z.number().int().min(1).default(1),
  /** Request and answer bodies kept for FastGPT's log detail (apps[].logBodies): each cut at
   *  maxBytes, all purged after retentionHours (docs/fastgpt.md#bodies). */
  bodyLog: z
    .strictObject({
      maxBytes: z.number().int().min(256).max(MIB).default(8192),
      retentionHours: z.number().positive().max(24 * 365).default(72),
    })
    .prefault({}),
  /** The share window page: who may show it in a frame (its CSP's frame-ancestors). */
  sharePage: z
    .strictObject({
      frameAncestors: z
        .array(z.string().regex(FRAME_SOURCE, "expected 'self', 'none' or an origin such as https://portal.example.com"))
        .min(1, `give at least one source; ["'none'"] forbids every frame`)
        .refine((sources) => !sources.includes("'none'") || sources.length === 1, "'none' stands alone: it cannot be combined with other sources")
        .default(() => ["'self'"]),
    })
    .prefault({}),
});

const storeSchema = z.discriminatedUnion("driver", [
  z.strictObject({ driver: z.literal("sqlite"), path: z.string().min(1).default("./data/sluice.db") }),
  z.strictObject({ driver: z.literal("postgres"), url: z.url({ protocol: /^postgres(ql)?$/ }) }),
  z.strictObject({ driver: z.literal("memory") }),
]);

/** State shared by several instances (breaker, reservations, rate windows): docs/operations.md#several-instances. */
const clusterSchema = z.strictObject({
  redisUrl: z.url({ protocol: /^rediss?$/ }),
  /** A concurrency slot (`maxConcurrent`) of an instance that died frees after this. */
  slotTtlMs: z.number().int().min(500).default(30_000),
});

export const configSchema = z
  .strictObject({
    server: serverSchema.prefault({}),
    store: storeSchema.prefault({ driver: "sqlite" }),
    cluster: clusterSchema.optional(),
    channels: z.array(channelSchema).min(1),
    llmModels: z.array(modelSchema).min(1),
    vectorModels: z.array(vectorModelSchema).default([]),
    reRankModels: z.array(reRankModelSchema).default([]),
    audioSpeechModels: z.array(audioSpeechModelSchema).default([]),
    whisperModel: sttModelSchema.optional(),
    sttModels: z.array(sttModelSchema).default([]),
    apps: z.array(appSchema).default([]),
    apiKeys: z.array(apiKeySchema).default([]),
    shareLinks: z.array(shareLinkSchema).default([]),
    routing: routingSchema.prefault({}),
    /** Names clients use for configured models: a model name or a `*` glob → a configured model. */
    aliases: z.record(z.string().min(1).max(200), name).default({}),
    /** The Responses API's stored responses (`store: true`). */
    responses: z
      .strictObject({
        retentionDays: z.number().positive().max(3650).default(30),
        // issue 27: what an app may keep (docs/configuration.md#responses)
        /** the most UTF-8 bytes one kept response (its conversation and answer) may take */
        maxBytes: z.number().int().positive().default(2 * MIB),
        /** an app's live stored responses, in rows and in bytes */
        maxRowsPerApp: z.number().int().positive().default(10_000),
        maxBytesPerApp: z.number().int().positive().default(256 * MIB),
      })
      .prefault({}),
    /** The dialects' own settings (docs/configuration.md#dialects). */
    dialects: z
      .strictObject({
        /** how long an Anthropic message thread is kept after its last answer (docs/claude-code.md#message-threads) */
        threadTtlHours: z.number().positive().max(87_600).default(72),
      })
      .prefault({}),
    /** OpenAI's Files and Batch API on idle capacity (docs/configuration.md#batches) */
    batches: batchesSchema.prefault({}),
    /** OpenTelemetry traces (docs/tracing.md#config); absent: OTEL_EXPORTER_OTLP_* decide, else off */
    tracing: tracingSchema.optional(),
    /** false: FastGPT's AI Proxy API may not create, change or delete channels (docs/fastgpt.md#channels) */
    channelWrites: z.boolean().default(true),
    /** true: channels may connect to link-local and cloud-metadata addresses (docs/configuration.md#top-level) */
    allowLinkLocalChannels: z.boolean().default(false),
  })
  .superRefine(checkReferences);

export type Config = z.infer<typeof configSchema>;
export type ChannelConfig = Config["channels"][number];
export type ModelConfig = Config["llmModels"][number];
export type VectorModelConfig = Config["vectorModels"][number];
export type ReRankModelConfig = Config["reRankModels"][number];
export type AudioSpeechModelConfig = Config["audioSpeechModels"][number];
export type SttModelConfig = NonNullable<Config["whisperModel"]>;
export type AppConfig = Config["apps"][number];
export type ApiKeyConfig = Config["apiKeys"][number];
export type ShareLinkConfig = Config["shareLinks"][number];
export type ServerConfig = Config["server"];
export type StoreConfig = Config["store"];
export type RoutingConfig = Config["routing"];
export type ClusterConfig = NonNullable<Config["cluster"]>;
