// What a chat answer used (docs/api.md#metering), for the pipeline to settle: tokens (the upstream's
// usage, else counted), points, the conversation's new round stored in the same commit as the usage
// row, the share-link finish report once settled. Answered or cut, the request is billed for what
// was generated.
import type { ShareAuth } from "../share/callbacks.js";
import type { Used } from "../metered/spec.js";
import type { Store } from "../store/types.js";
import { countTextAsync, lastUserText } from "../tokens/counter.js";
import { computePoints } from "../tokens/points.js";
import { cachedTokensOf } from "../tokens/usage-details.js";
import type { AnswerNames } from "../stream/chunk.js";
import type { Usage } from "./attempt.js";
import type { ChatCall, ChatPlan } from "./plan.js";
import { buildReport, type ReportItem } from "./report.js";

export interface AnswerOutcome {
  /** the answer's text; a function because a relayed stream recovers it only when needed */
  text: () => string;
  usage: Usage | null | undefined;
  /** a function for the same reason: read only when a report is built */
  finishReason: () => string;
  /** the answer was cut: a non-empty partial answer is still stored as the chat's turn */
  cut?: boolean;
  /** the id and model the upstream's answer reports (a stream's: its first chunk's that has them) */
  names?: AnswerNames;
  /** a dialect's own record of the answer (made once its tokens are known), written with the usage row */
  keep?: (tokens: { inputTokens: number; outputTokens: number }) => Promise<unknown> | undefined;
}

export interface Settled {
  inputTokens: number;
  outputTokens: number;
  /** of `inputTokens`: served from the upstream's prefix cache */
  cachedTokens: number;
  points: number;
  /** built on first use: only detail answers and share-link finish callbacks need it */
  report(): ReportItem;
}

export interface SettleDeps {
  store: Store;
  shareAuth: ShareAuth;
  /** a stored turn longer than this is cut (and says so) */
  maxTurnBytes: number;
}

/** A turn as stored: whole, or its first `maxBytes` (at a character boundary) and a line saying how
 *  much was left out, so a huge turn can never make a chat too large to read (docs/api.md#conversations). */
export function cutTurn(text: string, maxBytes: number): string {
  if (text.length <= maxBytes / 3 || Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  const bytes = Buffer.from(text, "utf8");
  const note = (left: number) => `\n\n[… ${left} bytes of this turn were not stored]`;
  let end = maxBytes - Buffer.byteLength(note(bytes.length), "utf8");
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // not inside a character
  return bytes.toString("utf8", 0, Math.max(0, end)) + note(bytes.length - Math.max(0, end));
}

/** What the answer used (for the pipeline to settle), and its tokens and report (for the client). */
export async function chatUsed(deps: SettleDeps, call: ChatCall, plan: ChatPlan, out: AnswerOutcome): Promise<{ used: Used; settled: Settled }> {
  const { model, caller } = call;
  const { limited, req } = plan;
  // 1. Tokens: the upstream's usage wins; otherwise count (what the limits counted is not counted again).
  // counted in slices that yield to the event loop: an answer may be up to maxAnswerBytes long
  const inputTokens = out.usage?.prompt_tokens ?? (await limited.countPrompt());
  const outputTokens = out.usage?.completion_tokens ?? (await countTextAsync(out.text(), model.tokenizer));
  const cachedTokens = cachedTokensOf(out.usage, inputTokens);
  const points = computePoints(model, inputTokens, outputTokens, cachedTokens);
  const durationMs = performance.now() - call.started;
  let report: ReportItem | undefined;
  const settled: Settled = {
    inputTokens,
    outputTokens,
    cachedTokens,
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
  const round =
    plan.chatId && (!out.cut || out.text() !== "")
      ? deps.store.appendRound({
          appId: caller.app.id,
          chatId: plan.chatId,
          owner: plan.owner,
          // an app that shares its chats: any of its keys writes into any of them (docs/api.md#conversations)
          shared: caller.app.sharedChats,
          user: cutTurn(lastUserText(req.messages), deps.maxTurnBytes),
          assistant: cutTurn(out.text(), deps.maxTurnBytes),
          at: Date.now(),
          // only a request that sent variables changes the chat's
          variables: req.variables ? plan.variables : undefined,
        })
      : undefined;
  const kept = out.keep?.({ inputTokens, outputTokens });
  // 3. Once settled, the operator's finish report: queued, never awaited.
  const share = caller.share;
  const finish = () => {
    if (share?.link.authHost) deps.shareAuth.finish(share.link, share.token, caller.app.name ?? caller.app.id, [settled.report()], share.trace);
  };
  const used = {
    inputTokens,
    outputTokens,
    cachedTokens,
    points,
    finishReason: out.finishReason(),
    responseId: out.names?.id,
    responseModel: out.names?.model,
    writes: [round, kept],
    settled: finish,
  };
  return { used, settled };
}

/** The report a client sees with `detail`: share-link users never see the operator's system prompt
 *  in `historyPreview` (docs/api.md#share-links); the operator's finish callback gets the whole report. */
export function clientReport(call: ChatCall, settled: Settled): ReportItem {
  const report = settled.report();
  if (!call.caller.share) return report;
  return { ...report, historyPreview: report.historyPreview.filter((item) => item.obj !== "System") };
}
