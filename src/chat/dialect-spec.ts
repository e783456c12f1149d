// A dialect of chat as a spec of the metered pipeline (docs/architecture.md#dialects): the dialect's
// body parsed, its model resolved like chat's (aliases, the app's models), its request translated
// into a chat request, which the chat path limits (never trimming an agent's history), meters and
// sends; the upstream's answer translated back, whole or as it streams.
import type { ModelConfig } from "../config/schema.js";
import { jsonResponse } from "../http/json.js";
import type { Meter } from "../metered/meter.js";
import { appAllows, resolveModel } from "../metered/models.js";
import type { MeteredSpec, Streamed } from "../metered/spec.js";
import { historyCounts } from "../tokens/history-counts.js";
import { computePoints } from "../tokens/points.js";
import { usageDetail } from "../tokens/usage-details.js";
import { cutFinishReason } from "../http/cancel.js";
import { attemptChat, type ChatAnswer, type CompletionJson, type Usage } from "./attempt.js";
import type { ChatDialect, DialectUsage } from "./dialect.js";
import { affordChat, planChat, type ChatCall, type ChatPlan } from "./plan.js";
import { relayAnswer } from "./pump.js";
import { SSE_HEADERS, completionAsSse } from "./respond-stream.js";
import { settleChat } from "./settle.js";
import type { ChatSpecDeps } from "./spec.js";
import { TranslatedRelay } from "./translated-relay.js";

/** how long a dialect's opening events wait for the answer's first events to go out with */
const OPENING_WAIT_MS = 25;

interface DialectPlan<Ctx> extends ChatPlan {
  ctx: Ctx;
  chatCall: ChatCall;
}

export function createDialectSpec<Req, Ctx>(deps: ChatSpecDeps, dialect: ChatDialect<Req, Ctx>): MeteredSpec<Req, ModelConfig, DialectPlan<Ctx>, ChatAnswer> {
  return {
    what: "Chat",
    rawTexts: true,
    credential: (headers) => dialect.credential(headers),
    parse: (body) => dialect.parse(body),
    streams: (req) => dialect.streams(req),
    model: (req, caller) => resolveModel(deps.models, deps.aliases, dialect.model(req) ?? caller.app.model, (m) => appAllows(caller.app, m), deps.serves),
    least: (model) => computePoints(model, 0, 1),
    async prepare(call) {
      const { chat, ctx } = await dialect.toChat(call.req, call.caller);
      const chatCall: ChatCall = { ...call, req: chat };
      // an agent resends its whole conversation every turn: its counts are kept between requests
      const known = historyCounts.forCaller(call.caller.limits.at(-1)!.scope, call.model.tokenizer);
      return { ...(await planChat(deps, chatCall, { trim: false, known })), ctx, chatCall };
    },
    afford: (plan, call, held) => affordChat(plan, call.model, held),
    attempt: (client, plan) => attemptChat(client, plan, plan.chatCall),
    async respond(answer, plan, _call, meter) {
      if (answer.kind === "json" && !plan.stream) return respondWhole(deps, dialect, plan, meter, answer.completion);
      const body = answer.kind === "stream" ? answer.body : completionAsSse(answer.completion);
      return streamTranslated(deps, dialect, plan, meter, body, answer.kind === "stream" ? answer.maxBytes : Number.POSITIVE_INFINITY);
    },
  };
}

const usageOf = (t: { inputTokens: number; outputTokens: number }, usage: Usage | null | undefined): DialectUsage => ({
  input: t.inputTokens,
  output: t.outputTokens,
  reasoning: usageDetail(usage?.completion_tokens_details, "reasoning_tokens"),
  cached: usageDetail(usage?.prompt_tokens_details, "cached_tokens"),
});

async function respondWhole<Req, Ctx>(deps: ChatSpecDeps, dialect: ChatDialect<Req, Ctx>, plan: DialectPlan<Ctx>, meter: Meter, completion: CompletionJson): Promise<Response> {
  const choice = completion.choices[0];
  let answer: unknown;
  await settleChat(deps, plan.chatCall, plan, meter, {
    text: () => choice?.message?.content ?? "",
    usage: completion.usage,
    finishReason: () => choice?.finish_reason ?? "stop",
    keep: (t) => {
      answer = dialect.answer(completion, usageOf(t, completion.usage), plan.ctx);
      return dialect.keep?.(plan.ctx, answer, plan.chatCall.caller);
    },
  });
  return jsonResponse(answer);
}

function streamTranslated<Req, Ctx>(deps: ChatSpecDeps, dialect: ChatDialect<Req, Ctx>, plan: DialectPlan<Ctx>, meter: Meter, body: import("node:stream").Readable, maxBytes: number): Streamed {
  const translator = dialect.stream(plan.ctx);
  const call = plan.chatCall;
  // The opening events go out with the answer's first events, in one socket write rather than two
  // (a write costs more than its bytes: docs/performance.md#what-keeps-the-hot-path-short), or on
  // their own once the model has said nothing for OPENING_WAIT_MS.
  let opening = translator.begin();
  let wait: NodeJS.Timeout | undefined;
  const takeOpening = () => {
    const text = opening;
    opening = "";
    clearTimeout(wait);
    return text;
  };
  return {
    headers: SSE_HEADERS,
    error: (err) => takeOpening() + translator.fail(err),
    async pump(res) {
      try {
        const write = (text: string) => {
          if (opening) text = takeOpening() + text;
          return res.destroyed || res.writableEnded ? true : res.write(text);
        };
        wait = setTimeout(() => opening && write(""), OPENING_WAIT_MS);
        const onFirstContent = () => (call.facts.ttftMs = performance.now() - call.started);
        const relay = new TranslatedRelay(translator, write, call.model.model, onFirstContent);
        const text = () => relay.generated();
        const cut = await relayAnswer(body, res, relay, maxBytes, call.cancel, call.model.model);
        if (cut) {
          // cut: billed for what was generated; the pipeline ends the stream with the dialect's error
          await settleChat(deps, call, plan, meter, { text, usage: relay.usage, finishReason: () => cutFinishReason(call.cancel), cut });
          throw cut;
        }
        const finishReason = relay.finishReason() ?? "stop";
        let closing = "";
        await settleChat(deps, call, plan, meter, {
          text,
          usage: relay.usage,
          finishReason: () => finishReason,
          keep: (t) => {
            closing = translator.end(finishReason, usageOf(t, relay.usage));
            return dialect.keep?.(plan.ctx, translator.result?.(), call.caller);
          },
        });
        write(closing);
      } finally {
        clearTimeout(wait); // the pump is over: the opening goes with the error events, or nowhere
      }
    },
  };
}
