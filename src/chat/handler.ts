// POST /v1/chat/completions and /api/v1/chat/completions: one request from body to answer.
import type { H3Event } from "h3";
import type { ModelConfig } from "../config/schema.js";
import { readJsonBody, type BodyLimits } from "../http/body.js";
import { GatewayError, toGatewayError } from "../http/errors.js";
import { HANDLED, factsOf, type RequestFacts } from "../http/facts.js";
import { trackRequest, type Inflight } from "../http/inflight.js";
import type { Observer } from "../observability/observer.js";
import { chatNotOwned } from "../share/links.js";
import type { Store } from "../store/types.js";
import { lastUserText } from "../tokens/counter.js";
import { historyCounts } from "../tokens/history-counts.js";
import { computePoints } from "../tokens/points.js";
import { UpstreamError } from "../upstream/errors.js";
import { requestAnswer } from "../upstream/failover.js";
import type { ChannelRouter } from "../upstream/router.js";
import { identifyCaller, resolveModel, type Caller, type CallerDeps } from "./caller.js";
import { applyLimits, type LimitedChat } from "./limits.js";
import type { Quota, Reservation, WorstCase } from "./quota.js";
import { parseChatRequest, type ChatMessage, type ChatRequest } from "./request-schema.js";
import { respondJson } from "./respond-json.js";
import { SSE_HEADERS, completionAsSse, relayStream } from "./respond-stream.js";
import { settleFailure, type Exchange, type SettleDeps, type Settled } from "./settle.js";
import { createPromptFiller, mergeVariables, type Variables } from "./variables.js";

export interface ChatDeps extends CallerDeps, SettleDeps {
  body: BodyLimits;
  models: Map<string, ModelConfig>;
  router: ChannelRouter;
  quota: Quota;
  observer: Observer;
  inflight: Inflight;
  maxAttempts: number;
}

export function createChatHandler(deps: ChatDeps) {
  return async function handleChat(event: H3Event): Promise<Response | typeof HANDLED> {
    const time = Date.now();
    const started = performance.now();
    const facts = factsOf(event);

    // 1. A key, when one is sent, is checked before the body is read: a wrong key costs no parsing.
    const authorization = event.req.headers.get("authorization");
    const key = authorization ? await deps.keyring.authenticateFresh(authorization) : undefined;

    // the request's work stops when the client leaves, a deadline passes or the gateway shuts down
    const { cancel, untrack, nodeRes } = trackRequest(event, deps.inflight);

    let deadline: NodeJS.Timeout | undefined;
    let reservation: Reservation | undefined;
    let ex: Exchange | undefined;
    try {
      // 2. The body, validated.
      const req = parseChatRequest(await readJsonBody(event, deps.body, cancel, true));
      facts.stream = req.stream === true;

      // 3. The caller (app key or share-link user), its app and the model.
      const caller = identifyCaller(deps, key, req, time);
      Object.assign(facts, { appId: caller.app.id, keyName: caller.key?.name, shareId: caller.share?.link.shareId });
      const model = resolveModel(deps.models, caller.app, req.model, deps.router.serves);
      facts.model = model.model;

      // 4. Share-link users: the operator's before-chat check gives the uid.
      const uid = caller.share ? await deps.shareAuth.start(caller.share.link, caller.share.token, lastUserText(req.messages)) : undefined;

      // 5. Conversation history and variables, then the model's limits (with the system prompt filled in).
      const stored = req.chatId ? await loadChat(deps.store, caller, req.chatId, uid) : undefined;
      const variables = mergeVariables(stored?.variables, req.variables, deps.body.maxBytes);
      const fillIn = createPromptFiller(variables, { now: new Date(time), maxBytes: deps.body.maxBytes });
      const known = req.chatId ? historyCounts.forChat(caller.app.id, req.chatId, model.tokenizer) : undefined;
      const limited = await applyLimits(req, mergeHistory(stored?.history ?? [], req.messages), model, caller.app, { renderPrompt: fillIn, known });

      // 6. Budgets and rates: the worst case is held before the call and settled to the actual after.
      reservation = await deps.quota.admit(caller.limits, worstCase(caller, model, limited), time);

      // 7. An answer from some channel of the model; each attempt runs under its channel's total deadline.
      ex = { caller, model, req, limited, reservation, chatId: req.chatId, variables, uid, channel: "", time, started };
      const exchange = ex;
      const { answer, entry } = await requestAnswer(deps.router, deps.observer, {
        model: model.model,
        body: upstreamBody(req, model, limited),
        stream: req.stream === true,
        cancel,
        maxAttempts: deps.maxAttempts,
        onAttempt: (attempt) => {
          exchange.channel = facts.channel = attempt.config.name;
          facts.attempts = (facts.attempts ?? 0) + 1;
          clearTimeout(deadline);
          deadline = setTimeout(() => cancel.abort("timeout"), attempt.config.totalTimeoutMs);
        },
      });
      const channel = entry.config.name;

      // 8. The answer, in the shape the client asked for.
      const detail = req.detail === true && (!caller.share || caller.share.link.responseDetail);
      if (!req.stream) {
        if (answer.kind !== "json") throw new GatewayError(502, "upstream_error", "The model server streamed an answer that was asked for whole.", { type: "api_error" });
        deps.observer.upstreamFinished(channel, model.model, "ok");
        const { response, settled } = await respondJson(deps, ex, answer.completion, detail);
        recordTokens(facts, settled);
        return response;
      }
      if (!nodeRes) throw new GatewayError(500, "stream_unsupported", "Streaming needs the Node server adapter.", { type: "server_error" });
      const body = answer.kind === "stream" ? answer.body : completionAsSse(answer.completion);
      nodeRes.writeHead(200, SSE_HEADERS); // x-request-id: set by the route wrapper
      const end = await relayStream(deps, ex, body, nodeRes, {
        detail,
        includeUsage: req.stream_options?.include_usage === true,
        signal: cancel,
        maxBytes: answer.kind === "stream" ? answer.maxBytes : Number.POSITIVE_INFINITY,
        onFirstToken: () => (facts.ttftMs = performance.now() - started),
      });
      deps.observer.upstreamFinished(channel, model.model, end.error instanceof UpstreamError ? end.error.outcome : end.error ? "http_error" : "ok");
      recordTokens(facts, end.settled);
      facts.errorCode = end.error?.code;
      return HANDLED;
    } catch (err) {
      if (err instanceof UpstreamError && err.detail) facts.upstreamMessage = err.detail;
      if (ex?.channel) await settleFailure(deps, ex, err instanceof GatewayError ? err.status : 500);
      else reservation?.release();
      if (!nodeRes?.headersSent) throw err;
      // a stream already begun can only end with an error event (CONTRACTS §3)
      const error = toGatewayError(err);
      facts.errorCode = error.code;
      nodeRes.write(`data: ${JSON.stringify(error.toBody())}\n\n`);
      return HANDLED;
    } finally {
      clearTimeout(deadline);
      untrack();
    }
  };
}

/** The most the request can cost: its prompt and all of max_tokens (the prompt counted only when its
 *  bound does not fit a budget). */
function worstCase(caller: Caller, model: ModelConfig, limited: LimitedChat): WorstCase | number {
  if (!caller.limits.some((l) => l.maxUsagePoints >= 0)) return 0;
  return {
    bound: computePoints(model, limited.promptBound, limited.maxTokens),
    counted: async () => computePoints(model, await limited.countPrompt(), limited.maxTokens),
  };
}

function upstreamBody(req: ChatRequest, model: ModelConfig, limited: LimitedChat): Record<string, unknown> {
  // fields only FastGPT reads never reach the upstream (CONTRACTS §13): some upstreams reject unknown fields
  const { chatId, detail, variables, shareId, outLinkUid, appId, responseChatItemId, customUid, metadata, retainDatasetCite, max_completion_tokens, stream_options, temperature, ...rest } = req;
  const body: Record<string, unknown> = { ...rest, model: model.model, messages: limited.messages, max_tokens: limited.maxTokens };
  if (limited.temperature !== undefined) body.temperature = limited.temperature;
  // usage is always asked for, so tokens are the model's own count; hidden later if the client did not ask
  if (req.stream) body.stream_options = { ...(stream_options ?? {}), include_usage: true };
  return body;
}

async function loadChat(store: Store, caller: Caller, chatId: string, uid: string | undefined): Promise<{ history: ChatMessage[]; variables?: Variables }> {
  // the chat and its messages in one read (one statement on PostgreSQL); a share-link user's chat is
  // checked to be theirs before any message is read; app keys use any chat of their app
  const who = caller.share ? { shareId: caller.share.link.shareId, uid: uid! } : null;
  const found = await store.openChat(caller.app.id, chatId, who, { limit: caller.app.history * 2, maxBytes: Number.POSITIVE_INFINITY, create: false });
  if (found.status === "missing") return { history: [] };
  if (found.status === "not_owned") throw chatNotOwned("chatId");
  return { history: found.messages.map((m) => ({ role: m.role, content: m.content })), variables: found.chat.variables };
}

/** The request's system messages first, then the stored history, then the rest of the request. */
function mergeHistory(history: ChatMessage[], messages: ChatMessage[]): ChatMessage[] {
  if (history.length === 0) return messages;
  const system = messages.filter((m) => m.role === "system");
  return [...system, ...history, ...messages.filter((m) => m.role !== "system")];
}

function recordTokens(facts: RequestFacts, s: Settled): void {
  facts.inputTokens = s.inputTokens;
  facts.outputTokens = s.outputTokens;
  facts.points = s.points;
  facts.finishReason = s.finishReason;
}
