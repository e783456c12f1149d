// What the gateway reports about its work. Metrics and the request log both listen here, so the
// request pipeline reports each fact once and never knows who consumes it.

export type ShareCallbackKind = "init" | "start" | "finish";
export type ShareCallbackOutcome = "success" | "rejected" | "error" | "retry" | "dropped";

/** One finished HTTP request, as the request log and the metrics see it. No key, token or content. */
export interface RequestRecord {
  requestId: string;
  /** the route pattern (e.g. `/v1/chat/completions`), or `unmatched`: never the raw path */
  route: string;
  method: string;
  status: number;
  appId?: string;
  keyName?: string;
  shareId?: string;
  model?: string;
  channel?: string;
  /** channels tried for the answer (docs/api.md#upstream-failures), counting the one that answered */
  attempts?: number;
  stream?: boolean;
  inputTokens?: number;
  outputTokens?: number;
  points?: number;
  durationMs: number;
  /** time to first token, streamed answers only */
  ttftMs?: number;
  /** OpenAI error code when the request failed */
  errorCode?: string;
  /** why the answer ended: the upstream's finish reason, or client_abort, upstream_error, shutdown */
  finishReason?: string;
  /** points the upstream's usage came to beyond the budget's hold: not charged (docs/api.md#budgets) */
  pointsOverHold?: number;
  /** an upstream's own error message (redacted), for the operator */
  upstreamMessage?: string;
  /** what a 500 internal_error caught, for the operator's log (never sent to the client) */
  internalError?: unknown;
}

/** What quotas by time report, for the dashboard (docs/operations.md#metrics). */
export interface QuotaObserver {
  /** A request settled `tokens` against the tokens per minute of a scope. */
  tokensUsed(scopeKind: string, name: string, tokens: number, tpm: number): void;
  /** A scope's current `period` has spent `spent` of its `limit` points (the store's count). */
  periodSpent(scopeKind: string, name: string, period: string, spent: number, limit: number): void;
}

export interface Observer extends QuotaObserver {
  requestStarted(route: string): void;
  requestFinished(record: RequestRecord): void;
  upstreamFinished(channel: string, model: string, outcome: UpstreamOutcome): void;
  channelState(channel: string, up: boolean): void;
  shareCallback(kind: ShareCallbackKind, outcome: ShareCallbackOutcome): void;
  /** one attempt on a channel (`sluice_upstream_attempts_total`, docs/operations.md#metrics) */
  upstreamAttempt(channel: string, outcome: AttemptOutcome): void;
  /** a request refused because a budget could not hold it */
  budgetRefused(scopeKind: string): void;
  /** requests waiting for one of the channel's connections */
  channelQueue(channel: string, depth: number): void;
  /** a call's wait in the channel's queue (0 when a slot was free), by the caller's configured priority */
  queueWait(channel: string, priority: number, seconds: number): void;
  /** how a request's first channel was chosen (docs/routing.md) */
  routeDecision(model: string, decision: RouteDecision): void;
  /** a channel's load as routing sees it (docs/routing.md#load) */
  channelLoad(channel: string, load: number): void;
  /** the share of a request's prefix its chosen channel held (docs/routing.md#prefix) */
  prefixMatch(model: string, ratio: number): void;
  /** the chunks a channel's prefix index holds */
  prefixIndexEntries(channel: string, entries: number): void;
  /** prompt tokens the channel served from its prefix cache */
  cachedTokens(channel: string, model: string, tokens: number): void;
  /** a config reload: `notes` are the problems of a refused one, or what needs a restart */
  configReloaded(ok: boolean, notes: string[]): void;
  /** an error that reached the process's last resort (the gateway carries on) */
  processError(kind: ProcessErrorKind): void;
  /** a channel write or status change through FastGPT's AI Proxy API (docs/fastgpt.md#channels) */
  channelWrite(op: ChannelWriteOp, outcome: ChannelWriteOutcome): void;
  /** whether a channel is enabled, as its status says (docs/fastgpt.md#channels) */
  channelEnabled(channel: string, enabled: boolean): void;
}

/** What went wrong on an upstream attempt, as the metrics and the request log name it. */
export type UpstreamOutcome =
  | "ok"
  | "http_error"
  | "unreachable"
  | "timeout"
  | "stream_cut"
  | "aborted"
  | "rate_limited"
  | "auth_failed"
  | "rejected"
  | "busy"
  | "too_large"
  | "shutdown";

export type ChannelWriteOp = "create" | "update" | "delete" | "status";
/** `refused`: bad input, writes off, a taken name; `error`: the store failed */
export type ChannelWriteOutcome = "ok" | "refused" | "error";

export type RouteDecision = "prefix" | "pinned" | "spilled" | "least_loaded";
export type AttemptOutcome = "ok" | "retried" | "timeout" | "rate_limited" | "error" | "circuit_open" | "queue_full";
export type ProcessErrorKind = "uncaught_exception" | "unhandled_rejection";

/** Fans each report out to several observers. */
export function combineObservers(observers: Observer[]): Observer {
  return {
    requestStarted: (route) => observers.forEach((o) => o.requestStarted(route)),
    requestFinished: (record) => observers.forEach((o) => o.requestFinished(record)),
    upstreamFinished: (c, m, out) => observers.forEach((o) => o.upstreamFinished(c, m, out)),
    channelState: (c, up) => observers.forEach((o) => o.channelState(c, up)),
    shareCallback: (k, out) => observers.forEach((o) => o.shareCallback(k, out)),
    upstreamAttempt: (c, out) => observers.forEach((o) => o.upstreamAttempt(c, out)),
    budgetRefused: (kind) => observers.forEach((o) => o.budgetRefused(kind)),
    channelQueue: (c, depth) => observers.forEach((o) => o.channelQueue(c, depth)),
    queueWait: (c, p, s) => observers.forEach((o) => o.queueWait(c, p, s)),
    routeDecision: (m, d) => observers.forEach((o) => o.routeDecision(m, d)),
    channelLoad: (c, load) => observers.forEach((o) => o.channelLoad(c, load)),
    prefixMatch: (m, r) => observers.forEach((o) => o.prefixMatch(m, r)),
    prefixIndexEntries: (c, n) => observers.forEach((o) => o.prefixIndexEntries(c, n)),
    cachedTokens: (c, m, n) => observers.forEach((o) => o.cachedTokens(c, m, n)),
    configReloaded: (ok, notes) => observers.forEach((o) => o.configReloaded(ok, notes)),
    processError: (kind) => observers.forEach((o) => o.processError(kind)),
    channelWrite: (op, outcome) => observers.forEach((o) => o.channelWrite(op, outcome)),
    channelEnabled: (c, enabled) => observers.forEach((o) => o.channelEnabled(c, enabled)),
    tokensUsed: (k, n, used, tpm) => observers.forEach((o) => o.tokensUsed(k, n, used, tpm)),
    periodSpent: (k, n, p, spent, limit) => observers.forEach((o) => o.periodSpent(k, n, p, spent, limit)),
  };
}

export const silentObserver: Observer = {
  requestStarted() {},
  requestFinished() {},
  upstreamFinished() {},
  channelState() {},
  shareCallback() {},
  upstreamAttempt() {},
  budgetRefused() {},
  channelQueue() {},
  queueWait() {},
  routeDecision() {},
  channelLoad() {},
  prefixMatch() {},
  prefixIndexEntries() {},
  cachedTokens() {},
  configReloaded() {},
  processError() {},
  channelWrite() {},
  channelEnabled() {},
  tokensUsed() {},
  periodSpent() {},
};
