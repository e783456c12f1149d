// A dialect of chat as a spec of the metered pipeline (docs/architecture.md#dialects): the dialect's
// body parsed, its model resolved like chat's (aliases, the app's models), its request translated
// into a chat request, which the chat path limits (never trimming an agent's history), meters and
// sends; the upstream's answer translated back, whole or as it streams.
import type { Readable } from "node:stream";
import type { ModelConfig } from "../config/schema.js";
import { jsonResponse } from "../http/json.js";
import { appAllows, resolveModel } from "../metered/models.js";
import type { MeteredSpec, Streamed, Whole } from "../metered/spec.js";
import { historyCounts } from "../tokens/history-counts.js";
import { wholeOrStream } from "../stream/answer.js";
import { SSE_HEADERS } from "../stream/sse.js";
import { TranslatedRelay } from "../stream/translated-relay.js";
import { answerNames } from "../stream/chunk.js";
import { computePoints } from "../tokens/points.js";
import { usageDetail } from "../tokens/usage-details.js";
import { attemptChat, type ChatAnswer, type CompletionJson, type Usage } from "./attempt.js";
import type { ChatDialect, DialectUsage } from "./dialect.js";
import { affordChat, planChat, type ChatCall, type ChatPlan } from "./plan.js";
import { completionAsSse } from "./respond-stream.js";
import { chatUsed } from "./settle.js";
import type { ChatSpecDeps } from "./spec.js";

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
    parse: ({ body }) => dialect.parse(body),
    streams: (req) => dialect.streams(req),
    model: (req, caller) => resolveModel(deps.models, deps.aliases, dialect.model(req) ?? caller.app.model, (m) => appAllows(caller.app, m), deps.serves),
    least: (model) => computePoints(model, 0, 1),
    async prepare(call) {
      const { chat, ctx } = await dialect.toChat(call.req, call.caller);
      const chatCall: ChatCall = { ...call, req: chat };
      // an agent resends its whole conversation every turn: its counts are kept between requests
      const known = historyCounts.forCaller(call.caller.scope, call.model.tokenizer);
      return { ...(await planChat(deps, chatCall, { trim: false, known })), ctx, chatCall };
    },
    afford: (plan, call, held) => affordChat(plan, call.model, held),
    affinity: (plan, call) => ({
      session: dialect.session?.(call.req),
      user: plan.req.user ?? (call.req as { safety_identifier?: unknown }).safety_identifier,
      prompt: plan.limited.messages,
      tools: plan.req.tools,
    }),
    attempt: (client, plan) => attemptChat(client, plan, plan.chatCall),
    respond: async (answer, plan) =>
      wholeOrStream(answer, plan.stream, {
        whole: (completion) => respondWhole(deps, dialect, plan, completion),
        stream: (body, maxBytes) => streamTranslated(deps, dialect, plan, body, maxBytes),
        asSse: completionAsSse,
      }),
  };
}

const usageOf = (t: { inputTokens: number; outputTokens: number }, usage: Usage | null | undefined): DialectUsage => ({
  input: t.inputTokens,
  output: t.outputTokens,
  reasoning: usageDetail(usage?.completion_tokens_details, "reasoning_tokens"),
  cached: usageDetail(usage?.prompt_tokens_details, "cached_tokens"),
});

async function respondWhole<Req, Ctx>(deps: ChatSpecDeps, dialect: ChatDialect<Req, Ctx>, plan: DialectPlan<Ctx>, completion: CompletionJson): Promise<Whole> {
  const choice = completion.choices[0];
  let answer: unknown;
  const { used } = await chatUsed(deps, plan.chatCall, plan, {
    text: () => choice?.message?.content ?? "",
    usage: completion.usage,
    finishReason: () => choice?.finish_reason ?? "stop",
    names: answerNames(completion),
    keep: (t) => {
      answer = dialect.answer(completion, usageOf(t, completion.usage), plan.ctx);
      return dialect.keep?.(plan.ctx, answer, plan.chatCall.caller);
    },
  });
  return { used, reply: () => jsonResponse(answer) };
}

function streamTranslated<Req, Ctx>(deps: ChatSpecDeps, dialect: ChatDialect<Req, Ctx>, plan: DialectPlan<Ctx>, body: Readable, maxBytes: number): Streamed {
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
  let relay: TranslatedRelay;
  let closing = "";
  return {
    headers: SSE_HEADERS,
    body,
    maxBytes,
    sink(res, firstContent) {
      const write = (text: string) => {
        if (opening) text = takeOpening() + text;
        return res.destroyed || res.writableEnded ? true : res.write(text);
      };
      wait = setTimeout(() => opening && write(""), OPENING_WAIT_MS);
      relay = new TranslatedRelay(translator, write, call.model.model, firstContent);
      return relay;
    },
    async used(cut) {
      clearTimeout(wait); // the relay is over: the opening goes with the closing or the error events
      const finishReason = cut?.finishReason ?? relay.finishReason() ?? "stop";
      // a cut is billed for what was generated; the pipeline ends the stream with the dialect's error
      const keep = (t: { inputTokens: number; outputTokens: number }) => {
        closing = translator.end(finishReason, usageOf(t, relay.usage));
        return dialect.keep?.(plan.ctx, translator.result?.(), call.caller);
      };
      const out = { text: () => relay.generated(), usage: relay.usage, finishReason: () => finishReason, names: relay.names, cut: cut !== undefined, keep: cut ? undefined : keep };
      return (await chatUsed(deps, call, plan, out)).used;
    },
    end: () => takeOpening() + closing,
    error: (err) => takeOpening() + translator.fail(err),
  };
}
