// One request's metering (docs/api.md#metering): the channel it reached, then exactly one ending —
// settled to what was generated (usage row, spend, the budget hold settled to the actual points),
// or failed before anything was generated (the hold released; a usage row with the status when a
// channel was reached). The pipeline alone calls them: `settle` with what the kind's answer used,
// `fail` on every failure path (nothing once the request settled); a request that ends with
// neither is a bug the pipeline reports (`ended`).
import type { GatewayError } from "../http/errors.js";
import { UpstreamError } from "../upstream/errors.js";
import type { RequestFacts } from "../http/facts.js";
import type { Observer } from "../observability/observer.js";
import type { Store, UsageRow } from "../store/types.js";
import type { Caller } from "./caller.js";
import type { InternalCall } from "./internal-call.js";
import type { Reservation } from "./quota.js";

export interface Tally {
  inputTokens: number;
  /** absent for kinds that generate no tokens (embeddings, rerank) */
  outputTokens?: number;
  /** of `inputTokens`: served from the upstream's prefix cache; absent: none reported */
  cachedTokens?: number;
  points: number;
  /** the upstream's, or client_abort / upstream_error / shutdown for a cut answer; absent where
   *  answers have none */
  finishReason?: string;
  /** the id and the model the upstream's answer reports, when it reports them (names only, for the
   *  trace: docs/tracing.md#spans) */
  responseId?: string;
  responseModel?: string;
}

/** What an answer used, for the pipeline to settle: tokens, points, finish reason; `writes`, what
 *  the kind keeps of it (a conversation's round, a stored response), issued to share the usage row's
 *  commit; `settled`, what follows once it is on disk (a share link's finish report). */
export interface Used extends Tally {
  writes?: Array<Promise<unknown> | undefined>;
  settled?(): void;
}

export interface MeterDeps {
  store: Store;
  observer: Observer;
}

export class Meter {
  /** the channel of the current attempt ("" until one began), and its number */
  channel = "";
  channelId: number | null = null;
  #ended = false;

  /** settled or failed */
  get ended(): boolean {
    return this.#ended;
  }

  constructor(
    private readonly deps: MeterDeps,
    private readonly caller: Caller,
    private readonly model: string,
    private readonly reservation: Reservation,
    private readonly facts: RequestFacts,
    private readonly at: { time: number; started: number; chatId?: string; endpoint?: string; user?: string; bodiesKey?: string; internal?: InternalCall },
  ) {}

  /** The answer was given or cut (`cut`: the error that cut it): its usage row, written with `t.writes`
   *  in one commit, the spend and the hold settled to `t.points`; then `t.settled`. Resolves once the
   *  row is on disk. (`t` is read, never copied: no object is made here beyond the row.) */
  async settle(t: Used, cut?: GatewayError): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    const outcome = !cut ? "ok" : cut instanceof UpstreamError ? cut.outcome : "http_error";
    this.deps.observer.upstreamFinished(this.channel, this.model, outcome);
    if (t.cachedTokens) this.deps.observer.cachedTokens(this.channel, this.model, t.cachedTokens);
    // never past the hold: a budget spends at most what it held (docs/api.md#budgets); what the
    // upstream's usage says beyond it goes on the request log for the operator
    const points = t.points <= this.reservation.held ? t.points : this.reservation.held;
    const { facts } = this;
    if (points < t.points) facts.pointsOverHold = t.points - points;
    facts.inputTokens = t.inputTokens;
    facts.outputTokens = t.outputTokens;
    facts.points = points;
    facts.finishReason = t.finishReason;
    facts.cachedTokens = t.cachedTokens;
    facts.responseId = t.responseId;
    facts.responseModel = t.responseModel;
    const row = this.#row(cut?.status ?? 200, t, points, cut);
    await (t.writes ? Promise.all([row, ...t.writes]) : row);
    // tokens per minute count what the kind has tokens of (speech and transcription hold none)
    this.reservation.settle(points, t.inputTokens + (t.outputTokens ?? 0));
    t.settled?.();
  }

  /** Nothing was generated: the hold released, and a usage row with `status` once a channel was
   *  reached (a failed row write never hides the request's own error). */
  async fail(status: number, error?: GatewayError): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.reservation.release();
    if (this.channel) await this.#row(status, NOTHING, 0, error).catch(() => {});
  }

  /** The usage row written, or — for an internal call that keeps it — handed to its caller, who
   *  writes it with the line's output in one commit (docs/batches.md#durability). */
  #row(status: number, t: Pick<Tally, "inputTokens" | "outputTokens" | "cachedTokens" | "finishReason">, points: number, error?: GatewayError): Promise<void> {
    const { caller } = this;
    const durationMs = Math.round(performance.now() - this.at.started);
    const internal = this.at.internal;
    const write = internal?.keepUsage ? (row: UsageRow, scopes: string[]) => Promise.resolve(internal.keepUsage!(row, scopes)) : (row: UsageRow, scopes: string[]) => this.deps.store.recordUsage(row, scopes);
    return write(
      {
        time: this.at.time,
        appId: caller.app.id,
        keyName: caller.key?.name ?? null,
        shareId: caller.share?.link.shareId ?? null,
        model: this.model,
        channel: this.channel,
        inputTokens: t.inputTokens,
        outputTokens: t.outputTokens ?? 0,
        points,
        status,
        durationMs,
        chatId: this.at.chatId ?? null,
        finishReason: t.finishReason ?? null,
        requestId: this.facts.requestId ?? null,
        endpoint: this.at.endpoint ?? null,
        channelId: this.channelId,
        attempts: this.facts.attempts ?? null,
        // a whole answer's first byte is sent with its last
        ttfbMs: this.facts.ttftMs === undefined ? durationMs : Math.round(this.facts.ttftMs),
        error: error ? cut(`${error.code}: ${error.message}`) : null,
        cachedTokens: t.cachedTokens ?? 0,
        user: this.at.user ?? null,
        bodiesKey: this.at.bodiesKey ?? null,
        batchId: internal?.batch?.id ?? null,
        customId: internal?.batch?.customId ?? null,
      },
      caller.limits.map((l) => l.scope),
    );
  }
}

const NOTHING = { inputTokens: 0 };
const MAX_ERROR_CHARS = 1024;

function cut(text: string): string {
  return text.length <= MAX_ERROR_CHARS ? text : `${text.slice(0, MAX_ERROR_CHARS - 3)}...`;
}
