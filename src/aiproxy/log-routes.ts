// aiproxy's call logs as FastGPT's log page reads them (docs/fastgpt.md#call-logs): every usage row
// is a log — each request that reached a model server — with its id as the log's.
import type { H3Event } from "h3";
import type { Keyring } from "../auth/keys.js";
import type { ChannelConfig } from "../config/schema.js";
import type { Store, UsageRecord, UsageSearch } from "../store/types.js";
import { invalid, ok, recordNotFound } from "./envelope.js";
import { param, timestampParam, wholeParam, type Query } from "./query.js";

const DAY_MS = 24 * 60 * 60 * 1000;
/** One search spans at most 7 days, as aiproxy's. */
const MAX_SPAN_MS = 7 * DAY_MS;
const MAX_PER_PAGE = 100;

/** aiproxy's mode numbers, by the path called. */
const MODES: Array<[RegExp, number]> = [
  [/\/chat\/completions$/, 1],
  [/\/completions$/, 2],
  [/\/embeddings$/, 3],
  [/\/audio\/speech$/, 7],
  [/\/audio\/transcriptions$/, 8],
  [/\/rerank$/, 10],
  [/\/messages$/, 12],
  [/\/responses$/, 16],
];
export const modeOf = (endpoint: string | null | undefined) => MODES.find(([path]) => path.test(endpoint ?? ""))?.[1] ?? 0;

export interface LogRouteDeps {
  keyring: Keyring;
  store: Store;
  /** the channels served now: a channel's number to its name, for rows written before numbers */
  channels: ChannelConfig[];
}

export function createLogRoutes(deps: LogRouteDeps) {
  /** The channel a row reached, by number: its own, or by its name for rows written before numbers. */
  const idOfName = new Map(deps.channels.map((c) => [c.name, c.id ?? 0]));

  function logOf(r: UsageRecord) {
    const attempts = r.attempts ?? 1;
    return {
      id: r.id,
      request_id: r.requestId ?? "",
      request_at: r.time - r.durationMs,
      created_at: r.time,
      model: r.model,
      channel: r.channelId ?? idOfName.get(r.channel) ?? 0,
      code: r.status,
      mode: modeOf(r.endpoint),
      endpoint: r.endpoint ?? "",
      token_name: r.keyName ?? "",
      group: r.appId,
      usage: { input_tokens: r.inputTokens, output_tokens: r.outputTokens, total_tokens: r.inputTokens + r.outputTokens, cached_tokens: r.cachedTokens },
      used_amount: r.points,
      ttfb_milliseconds: r.ttfbMs ?? r.durationMs,
      ...(attempts > 1 && { retry_times: attempts - 1 }),
      ...(r.error && { content: r.error }),
      ip: "",
    };
  }

  return {
    async search(event: H3Event): Promise<Response> {
      const q = new URL(event.req.url).searchParams;
      const { rows, total } = await deps.store.searchUsage(searchOf(q, deps.channels, Date.now()));
      return ok({ logs: rows.map(logOf), total });
    },
    /** A log's bodies; none kept (the app keeps none, not an error under "errors", expired): 404,
     *  and FastGPT shows the row alone. */
    async detail(event: H3Event): Promise<Response> {
      const id = Number(event.context.params?.id);
      if (!Number.isInteger(id) || id <= 0) throw invalid("id: expected a positive integer log id");
      const bodies = await deps.store.getBodies(id, Date.now());
      if (!bodies) throw recordNotFound();
      return ok({
        id,
        log_id: id,
        request_body: bodies.request,
        response_body: bodies.response,
        request_body_truncated: bodies.requestTruncated,
        response_body_truncated: bodies.responseTruncated,
      });
    },
  };
}

/** The search a log query asks for (docs/fastgpt.md#call-logs). */
export function searchOf(q: Query, channels: ChannelConfig[], now: number): UsageSearch {
  const to = timestampParam(q, "end_timestamp") ?? now;
  const from = Math.max(timestampParam(q, "start_timestamp") ?? to - MAX_SPAN_MS, to - MAX_SPAN_MS);
  const page = Math.max(1, wholeParam(q, "p") ?? wholeParam(q, "page") ?? 1);
  const perPage = Math.min(Math.max(1, wholeParam(q, "per_page") ?? 10), MAX_PER_PAGE);
  const channelId = wholeParam(q, "channel");
  const codeType = param(q, "code_type") ?? "all";
  if (!["all", "success", "error"].includes(codeType)) throw invalid("code_type: expected all, success or error");
  const code = wholeParam(q, "code");
  const [by, dir] = (param(q, "order") ?? "created_at-desc").split("-");
  const column = by === "created_at" ? "time" : by === "request_at" ? "request_at" : by === "id" ? "id" : undefined;
  if (!column || (dir !== "asc" && dir !== "desc")) throw invalid("order: expected created_at, request_at or id, with -asc or -desc");
  return {
    from,
    to,
    requestId: param(q, "request_id"),
    channel: channelId === undefined ? undefined : { id: channelId, name: channels.find((c) => c.id === channelId)?.name ?? "" },
    model: param(q, "model_name"),
    status: codeType === "success" || codeType === "error" ? codeType : code,
    appId: param(q, "group"),
    keyName: param(q, "token_name"),
    order: { by: column, desc: dir === "desc" },
    limit: perPage,
    offset: (page - 1) * perPage,
  };
}
