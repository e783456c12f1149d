// The route table (docs/api.md#endpoints): every route once — method, paths, the label its metrics
// and request log use, whether it is metered, its error dialect, which of its paths FastGPT calls,
// and its handler in the current runtime. src/gateway.ts registers them in one loop.
import { aiproxyError } from "./aiproxy/envelope.js";
import { anthropicError } from "./dialects/anthropic/errors.js";
import type { ErrorFormat } from "./http/errors.js";
import type { Access } from "./auth/access.js";
import type { Handlers } from "./runtime.js";

export interface RouteDef {
  /** `ALL`: every method */
  method: "GET" | "POST" | "PUT" | "DELETE" | "ALL";
  paths: string[];
  /** the metrics and request-log label; absent: each path is its own label */
  label?: string;
  /** metered requests wait for, and need, the state shared with other instances */
  metered?: true;
  /** how errors are written (default: OpenAI's shape) */
  errors?: ErrorFormat;
  /** those of its paths FastGPT calls: their answers are FastGPT's (a model's reasoning also as
   *  `reasoning_content`, docs/fastgpt.md#reasoning) */
  fastgpt?: string[];
  /** its requests get a server span when tracing is on (metered routes always do: docs/tracing.md#spans) */
  traced?: true;
  /** who may call it, checked once before its handler (src/auth/access.ts) */
  access: Access;
  handler: keyof Handlers;
}

/** a model route under OpenAI's prefix and FastGPT's (`/api/v1/…`, flagged); `more`: its other paths */
const V1 = (path: string, ...more: string[]) => ({ paths: [`/v1${path}`, `/api/v1${path}`, ...more], fastgpt: [`/api/v1${path}`] });
/** aiproxy's paths take a trailing `/` or none (FastGPT calls `/api/channel/`) */
const SLASH = (...paths: string[]) => paths.flatMap((p) => [p, `${p}/`]);
/** FastGPT's AI Proxy API (docs/fastgpt.md#the-admin-api): aiproxy's envelope, one metrics label */
const AIPROXY = { label: "aiproxy", errors: aiproxyError, access: "admin" } as const;

export const ROUTES: RouteDef[] = [
  { method: "POST", ...V1("/chat/completions"), metered: true, access: "pipeline", handler: "chat" },
  // one label for both prefixes: dashboards select sluice_requests_total{route="embeddings"}
  { method: "POST", ...V1("/embeddings"), label: "embeddings", metered: true, access: "pipeline", handler: "embeddings" },
  // the dialects (docs/api.md#dialects): Anthropic's Messages, with its own error shape, and Responses
  { method: "POST", ...V1("/messages"), label: "messages", metered: true, errors: anthropicError, access: "pipeline", handler: "messages" },
  { method: "POST", ...V1("/messages/count_tokens"), label: "count_tokens", errors: anthropicError, access: "pipeline", handler: "countTokens" },
  { method: "POST", ...V1("/responses"), label: "responses", metered: true, access: "pipeline", handler: "responses" },
  { method: "GET", ...V1("/responses/:id"), label: "response_get", access: "key", handler: "responseGet" },
  { method: "DELETE", ...V1("/responses/:id"), label: "response_delete", access: "key", handler: "responseDelete" },
  // the rest of a model fleet (docs/fleet.md); Cohere's v2 clients post to /v2/rerank
  { method: "POST", ...V1("/rerank", "/v2/rerank"), label: "rerank", metered: true, access: "pipeline", handler: "rerank" },
  { method: "POST", ...V1("/audio/speech"), label: "speech", metered: true, access: "pipeline", handler: "speech" },
  { method: "POST", ...V1("/audio/transcriptions"), label: "transcription", metered: true, access: "pipeline", handler: "transcription" },
  { method: "POST", ...V1("/completions"), label: "completions", metered: true, access: "pipeline", handler: "completions" },
  // OpenAI's Files and Batch API, run on idle capacity (docs/batches.md): app keys only
  { method: "POST", paths: ["/v1/files"], label: "files", access: "key", handler: "fileUpload" },
  { method: "GET", paths: ["/v1/files"], label: "files", access: "key", handler: "fileList" },
  { method: "GET", paths: ["/v1/files/:id"], label: "file", access: "key", handler: "fileGet" },
  { method: "GET", paths: ["/v1/files/:id/content"], label: "file_content", access: "key", handler: "fileContent" },
  { method: "DELETE", paths: ["/v1/files/:id"], label: "file", access: "key", handler: "fileDelete" },
  { method: "POST", paths: ["/v1/batches"], label: "batches", access: "key", handler: "batchCreate" },
  { method: "GET", paths: ["/v1/batches"], label: "batches", access: "key", handler: "batchList" },
  { method: "GET", paths: ["/v1/batches/:id"], label: "batch", access: "key", handler: "batchGet" },
  { method: "POST", paths: ["/v1/batches/:id/cancel"], label: "batch_cancel", access: "key", handler: "batchCancel" },
  { method: "GET", ...V1("/models"), access: "key", handler: "models" },
  { method: "GET", ...V1("/models/:id"), access: "key", handler: "model" },
  { method: "GET", paths: ["/api/v1/usage"], access: "global", handler: "usage" },
  { method: "POST", paths: ["/api/share/init"], access: "anyone", traced: true, handler: "shareInit" },
  { method: "POST", paths: ["/api/share/chats"], access: "anyone", traced: true, handler: "shareChats" },
  { method: "POST", paths: ["/api/share/chat"], access: "anyone", traced: true, handler: "shareChat" },
  { method: "GET", paths: ["/chat/share"], access: "anyone", handler: "sharePage" },
  { method: "GET", paths: ["/chat/share/window.js"], access: "anyone", handler: "shareScript" },
  // the console (docs/console.md): a static page and its bundle; it calls the admin APIs above and below
  { method: "GET", paths: ["/console", "/console/"], label: "console", access: "anyone", handler: "consolePage" },
  { method: "GET", paths: ["/console/console.js", "/console/console.css"], label: "console", access: "anyone", handler: "consoleAsset" },
  { method: "GET", paths: ["/api/admin/channels"], access: "admin", handler: "adminChannels" },
  { method: "POST", paths: ["/api/admin/reload"], access: "admin", handler: "adminReload" },
  { method: "DELETE", paths: ["/api/admin/channels/:name/override"], label: "/api/admin/channels/override", access: "admin", handler: "adminChannelOverride" },
  { method: "POST", paths: ["/api/admin/keys"], access: "admin", handler: "adminKeyCreate" },
  { method: "GET", paths: ["/api/admin/keys"], access: "admin", handler: "adminKeyList" },
  { method: "DELETE", paths: ["/api/admin/keys/:name"], access: "admin", handler: "adminKeyRevoke" },
  { method: "GET", paths: SLASH("/api/channels/all"), ...AIPROXY, handler: "aiproxyChannelsAll" },
  { method: "GET", paths: SLASH("/api/channels"), ...AIPROXY, handler: "aiproxyChannels" },
  { method: "GET", paths: SLASH("/api/channels/type_metas"), ...AIPROXY, handler: "aiproxyTypeMetas" },
  { method: "GET", paths: SLASH("/api/channel/:id"), ...AIPROXY, handler: "aiproxyChannel" },
  { method: "POST", paths: SLASH("/api/channel"), ...AIPROXY, handler: "aiproxyChannelCreate" },
  { method: "PUT", paths: SLASH("/api/channel/:id"), ...AIPROXY, handler: "aiproxyChannelUpdate" },
  { method: "DELETE", paths: SLASH("/api/channel/:id"), ...AIPROXY, handler: "aiproxyChannelDelete" },
  { method: "POST", paths: SLASH("/api/channels/batch_delete"), ...AIPROXY, handler: "aiproxyChannelsDelete" },
  { method: "POST", paths: SLASH("/api/channel/:id/status"), ...AIPROXY, handler: "aiproxyChannelStatus" },
  { method: "POST", paths: SLASH("/api/channels/batch_status"), ...AIPROXY, handler: "aiproxyChannelsStatus" },
  { method: "GET", paths: ["/api/channel/:id/test/**:model"], ...AIPROXY, handler: "aiproxyChannelTest" },
  { method: "GET", paths: SLASH("/api/logs/search"), ...AIPROXY, handler: "aiproxyLogs" },
  { method: "GET", paths: SLASH("/api/logs/detail/:id"), ...AIPROXY, handler: "aiproxyLogDetail" },
  { method: "GET", paths: SLASH("/api/dashboardv2"), ...AIPROXY, handler: "aiproxyDashboard" },
  { method: "ALL", paths: ["/api/group/**", "/api/log/:group/group_channel/**", ...SLASH("/api/group_channels"), "/api/group_channel/**"], ...AIPROXY, handler: "aiproxyMember" },
  { method: "ALL", paths: ["/api/channels/**", "/api/channel/**", "/api/logs/**", "/api/log/**", "/api/dashboardv2/**", "/api/group", "/api/group_channel"], ...AIPROXY, handler: "aiproxyUnknown" },
];
