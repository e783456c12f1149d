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
  /** the request's trace and server span, when it has a trace (docs/tracing.md#logs) */
  traceId?: string;
  spanId?: string;
  /** the trace is sampled: exported, so a histogram's exemplar may point at it */
  traceSampled?: boolean;
  /** what a 500 internal_error caught, for the operator's log (never sent to the client) */
  internalError?: unknown;
}

/** Every event the gateway reports, each answered by nobody: the one list of events (adding one is
 *  one edit here), and the Observer a listener that hears nothing is. A listener implements only
 *  the events it needs (a `Listener`); combineObservers fans each event out to those that do. */
export const silentObserver = {
  requestStarted(_route: string): void {},
  requestFinished(_record: RequestRecord): void {},
  upstreamFinished(_channel: string, _model: string, _outcome: UpstreamOutcome): void {},
  channelState(_channel: string, _up: boolean): void {},
  shareCallback(_kind: ShareCallbackKind, _outcome: ShareCallbackOutcome): void {},
  /** one attempt on a channel (`sluice_upstream_attempts_total`, docs/operations.md#metrics) */
  upstreamAttempt(_channel: string, _outcome: AttemptOutcome): void {},
  /** a request refused because a budget could not hold it */
  budgetRefused(_scopeKind: string): void {},
  /** requests waiting for one of the channel's connections */
  channelQueue(_channel: string, _depth: number): void {},
  /** a call's wait in the channel's queue (0 when a slot was free), by the caller's configured priority */
  queueWait(_channel: string, _priority: number, _seconds: number): void {},
  /** how a request's first channel was chosen (docs/routing.md) */
  routeDecision(_model: string, _decision: RouteDecision): void {},
  /** a channel's load as routing sees it (docs/routing.md#load) */
  channelLoad(_channel: string, _load: number): void {},
  /** the share of a request's prefix its chosen channel held (docs/routing.md#prefix) */
  prefixMatch(_model: string, _ratio: number): void {},
  /** the chunks a channel's prefix index holds */
  prefixIndexEntries(_channel: string, _entries: number): void {},
  /** prompt tokens the channel served from its prefix cache */
  cachedTokens(_channel: string, _model: string, _tokens: number): void {},
  /** spans a collector took, and spans given up: a full queue, a failed or timed-out export (docs/tracing.md#cost) */
  traceSpansExported(_spans: number): void {},
  traceSpansDropped(_spans: number): void {},
  /** a config reload: `notes` are the problems of a refused one, or what needs a restart */
  configReloaded(_ok: boolean, _notes: string[]): void {},
  /** an error that reached the process's last resort (the gateway carries on) */
  processError(_kind: ProcessErrorKind): void {},
  /** a channel write or status change through FastGPT's AI Proxy API (docs/fastgpt.md#channels) */
  channelWrite(_op: ChannelWriteOp, _outcome: ChannelWriteOutcome): void {},
  /** whether a channel is enabled, as its status says (docs/fastgpt.md#channels) */
  channelEnabled(_channel: string, _enabled: boolean): void {},

  /** what quotas by time report, for the dashboard (docs/operations.md#metrics): a request settled
   *  `tokens` against the tokens per minute of a scope */
  tokensUsed(_scopeKind: string, _name: string, _tokens: number, _tpm: number): void {},
  /** a scope's current `period` has spent `spent` of its `limit` points (the store's count) */
  periodSpent(_scopeKind: string, _name: string, _period: string, _spent: number, _limit: number): void {},

  /** a batch line ended (docs/batches.md): `outcome` done, failed, cancelled, expired, or lost (another instance had taken it over) */
  batchLine(_endpoint: string, _outcome: string): void {},
  /** after a round of the batch runner: its lines running, and the store's batches by status */
  batchCounts(_running: number, _byStatus: Partial<Record<string, number>>): void {},
};

export type Observer = typeof silentObserver;
/** What the batch runner reports (docs/batches.md). */
export type BatchObserver = Pick<Observer, "batchLine" | "batchCounts">;
/** What quotas by time report (docs/operations.md#metrics). */
export type QuotaObserver = Pick<Observer, "tokensUsed" | "periodSpent">;
/** A listener: the events it needs. */
export type Listener = Partial<Observer>;

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

type Event = (...args: never[]) => void;

/** Fans each event out to the listeners that implement it (one that none implements does nothing). */
export function combineObservers(listeners: Listener[]): Observer {
  const combined: Record<string, Event> = { ...silentObserver };
  for (const name of Object.keys(silentObserver) as Array<keyof Observer>) {
    // a listener's silent events (spread from silentObserver) are not called
    const hearing = listeners.filter((l) => typeof l[name] === "function" && l[name] !== silentObserver[name]);
    if (hearing.length === 1) combined[name] = (hearing[0]![name] as Event).bind(hearing[0]);
    else if (hearing.length > 1) {
      const calls = hearing.map((l) => (l[name] as Event).bind(l));
      combined[name] = (...args) => {
        for (const call of calls) call(...args);
      };
    }
  }
  return combined as Observer;
}
