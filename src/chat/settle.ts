// After an answer: tokens, points, the stored turns, the usage row, the budget settlement and the
// share-link finish report. After a failure: a usage row with its status, nothing else stored.
import type { ModelConfig } from "../config/schema.js";
import type { ShareAuth } from "../share/callbacks.js";
import type { Store } from "../store/types.js";
import { countTextAsync, lastUserText } from "../tokens/counter.js";
import { computePoints } from "../tokens/points.js";
import type { Usage } from "../upstream/types.js";
import type { Caller } from "./caller.js";
import type { LimitedChat } from "./limits.js";
import type { Reservation } from "./quota.js";
import { buildReport, type ReportItem } from "./report.js";
import type { ChatRequest } from "./request-schema.js";
import type { Variables } from "./variables.js";

/** Everything known about one chat request once it is ready to go upstream. */
export interface Exchange {
  caller: Caller;
  model: ModelConfig;
  req: ChatRequest;
  limited: LimitedChat;
  reservation: Reservation;
  chatId: string | undefined;
  /** FastGPT variables: the chat's stored ones with the request's over them */
  variables: Variables;
  /** share-link users: the uid the operator (or the localId) gave */
  uid: string | undefined;
  channel: string;
  /** epoch ms at arrival, and performance.now() at arrival for durations */
  time: number;
  started: number;
}

export interface AnswerOutcome {
  /** the answer's text; a function because a relayed stream recovers it only when needed */
  text: () => string;
  usage: Usage | null | undefined;
  /** a function for the same reason: read only when a report is built */
  finishReason: () => string;
  /** set when the answer was cut (CONTRACTS §10): the usage row carries this status, and a
   *  non-empty partial answer is still stored as the chat's turn */
  status?: number;
}

export interface Settled {
  /** known without parsing only for cut answers (whole answers read it from the report) */
  finishReason?: string;
  inputTokens: number;
  outputTokens: number;
  points: number;
  /** built on first use: only detail answers and share-link finish callbacks need it */
  report(): ReportItem;
}

export interface SettleDeps {
  store: Store;
  shareAuth: ShareAuth;
}

export async function settleAnswer(deps: SettleDeps, ex: Exchange, out: AnswerOutcome): Promise<Settled> {
  const { model, limited } = ex;
  // 1. Tokens: the upstream's usage wins; otherwise count (what the limits counted is not counted again).
  // counted in slices that yield to the event loop: an answer may be up to maxAnswerBytes long
  const inputTokens = out.usage?.prompt_tokens ?? (await limited.countPrompt());
  const outputTokens = out.usage?.completion_tokens ?? (await countTextAsync(out.text(), model.tokenizer));
  const points = computePoints(model, inputTokens, outputTokens);
  const durationMs = performance.now() - ex.started;
  let report: ReportItem | undefined;
  const cut = out.status !== undefined;
  const settled: Settled = {
    finishReason: cut ? out.finishReason() : undefined,
    inputTokens,
    outputTokens,
    points,
    report: () =>
      (report ??= buildReport({
        model,
        messages: limited.messages,
        textOutput: out.text(),
        inputTokens,
        outputTokens,
        points,
        temperature: limited.temperature,
        maxTokens: limited.maxTokens,
        finishReason: out.finishReason(),
        runningTimeMs: durationMs,
      })),
  };

  // 2. The conversation's new round and the usage row, issued together so they share one commit;
  //    both are on disk before the client sees the end.
  const writes = [recordUsage(deps, ex, { status: out.status ?? 200, inputTokens, outputTokens, points, durationMs, finishReason: out.finishReason() })];
  if (ex.chatId && (!cut || out.text() !== "")) {
    writes.push(
      deps.store.appendRound({
        appId: ex.caller.app.id,
        chatId: ex.chatId,
        // app keys write into any chat of their app, as they read any (docs/store.md#chat-ownership)
        owner: ex.caller.share ? { shareId: ex.caller.share.link.shareId, uid: ex.uid! } : { keyName: ex.caller.key?.name ?? "" },
        shared: !ex.caller.share,
        user: lastUserText(ex.req.messages),
        assistant: out.text(),
        at: Date.now(),
        // only a request that sent variables changes the chat's
        variables: ex.req.variables ? ex.variables : undefined,
      }).then(() => {}),
    );
  }
  await Promise.all(writes);
  ex.reservation.settle(points);

  // 3. The operator's finish report: queued, never awaited.
  const share = ex.caller.share;
  if (share?.link.authHost) deps.shareAuth.finish(share.link, share.token, ex.caller.app.name ?? ex.caller.app.id, [settled.report()]);
  return settled;
}

export async function settleFailure(deps: SettleDeps, ex: Exchange, status: number): Promise<void> {
  ex.reservation.release();
  await recordUsage(deps, ex, { status, inputTokens: 0, outputTokens: 0, points: 0, durationMs: performance.now() - ex.started, finishReason: null }).catch(() => {});
}

async function recordUsage(
  deps: SettleDeps,
  ex: Exchange,
  r: { status: number; inputTokens: number; outputTokens: number; points: number; durationMs: number; finishReason: string | null },
): Promise<void> {
  await deps.store.recordUsage(
    {
      time: ex.time,
      appId: ex.caller.app.id,
      keyName: ex.caller.key?.name ?? null,
      shareId: ex.caller.share?.link.shareId ?? null,
      model: ex.model.model,
      channel: ex.channel,
      inputTokens: r.inputTokens,
      outputTokens: r.outputTokens,
      points: r.points,
      status: r.status,
      durationMs: Math.round(r.durationMs),
      chatId: ex.chatId ?? null,
      finishReason: r.finishReason,
    },
    ex.caller.limits.map((l) => l.scope),
  );
}

/** The report a client sees with `detail`: share-link users never see the operator's system prompt
 *  in `historyPreview` (CONTRACTS §13); the operator's finish callback gets the whole report. */
export function clientReport(ex: Exchange, settled: Settled): ReportItem {
  const report = settled.report();
  if (!ex.caller.share) return report;
  return { ...report, historyPreview: report.historyPreview.filter((item) => item.obj !== "System") };
}
