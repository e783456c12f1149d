// POST /v1/chat/completions and /api/v1/chat/completions: one request from body to answer.
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import type { ModelConfig } from "../config/schema.js";
import { readJsonBody } from "../http/body.js";
import { ClientGone } from "../http/client-gone.js";
import { GatewayError } from "../http/errors.js";
import { HANDLED, factsOf, type RequestFacts } from "../http/facts.js";
import type { Observer } from "../observability/observer.js";
import { assertChatOwner } from "../share/links.js";
import type { Store } from "../store/types.js";
import { lastUserText } from "../tokens/counter.js";
import { UpstreamError, mapTransportError } from "../upstream/errors.js";
import type { ChannelRouter } from "../upstream/router.js";
import type { UpstreamAnswer } from "../upstream/types.js";
import { identifyCaller, resolveModel, type Caller, type CallerDeps } from "./caller.js";
import { applyLimits, type LimitedChat } from "./limits.js";
import type { Quota } from "./quota.js";
import { parseChatRequest, type ChatMessage, type ChatRequest } from "./request-schema.js";
import { respondJson } from "./respond-json.js";
import { SSE_HEADERS, completionAsSse, relayStream } from "./respond-stream.js";
import { settleFailure, type Exchange, type SettleDeps, type Settled } from "./settle.js";

export interface ChatDeps extends CallerDeps, SettleDeps {
  bodyLimit: number;
  models: Map<string, ModelConfig>;
  router: ChannelRouter;
  quota: Quota;
  observer: Observer;
}

export function createChatHandler(deps: ChatDeps) {
  return async function handleChat(event: H3Event): Promise<Response | typeof HANDLED> {
    const time = Date.now();
    const started = performance.now();
    const facts = factsOf(event);

    // 1. A key, when one is sent, is checked before the body is read: a wrong key costs no parsing.
    const authorization = event.req.headers.get("authorization");
    const key = authorization ? deps.keyring.authenticate(authorization) : undefined;

    // 2. The body, validated.
    const req = parseChatRequest(await readJsonBody(event, deps.bodyLimit));
    facts.stream = req.stream === true;

    // 3. The caller (app key or share-link user), its app and the model.
    const caller = identifyCaller(deps, key, req, time);
    Object.assign(facts, { appId: caller.app.id, keyName: caller.key?.name, shareId: caller.share?.link.shareId });
    const model = resolveModel(deps.models, caller.app, req.model, deps.router.serves);
    facts.model = model.model;

    // 4. Budgets and rates: reserve before the call, settle after.
    const reservation = await deps.quota.admit(caller.limits, time);
    let ex: Exchange | undefined;
    try {
      // 5. Share-link users: the operator's before-chat check gives the uid.
      const uid = caller.share ? await deps.shareAuth.start(caller.share.link, caller.share.token, lastUserText(req.messages)) : undefined;

      // 6. Conversation history, then the model's limits.
      const history = req.chatId ? await loadHistory(deps.store, caller, req.chatId, uid) : [];
      const limited = applyLimits(req, mergeHistory(history, req.messages), model, caller.app);

      // 7. The upstream call, aborted when the client goes away.
      const gone = new ClientGone();
      const nodeRes = event.runtime?.node?.res as ServerResponse | undefined; // http/1.1 only: listhen serves no http2
      nodeRes?.once("close", () => nodeRes.writableFinished || gone.abort());
      ex = { caller, model, req, limited, reservation, chatId: req.chatId, uid, channel: "", time, started };
      const { answer, channel } = await callUpstream(deps, ex, upstreamBody(req, model, limited), gone);
      ex.channel = facts.channel = channel;

      // 8. The answer, in the shape the client asked for.
      const detail = req.detail === true && (!caller.share || caller.share.link.responseDetail);
      if (!req.stream) {
        if (answer.kind !== "json") throw new GatewayError(502, "upstream_bad_response", "The model server streamed an answer that was asked for whole.");
        deps.observer.upstreamFinished(channel, model.model, "ok");
        const { response, settled } = await respondJson(deps, ex, answer.completion, detail);
        recordTokens(facts, settled);
        return response;
      }
      if (!nodeRes) throw new GatewayError(500, "stream_unsupported", "Streaming needs the Node server adapter.", { type: "server_error" });
      const body = answer.kind === "stream" ? answer.body : completionAsSse(answer.completion);
      nodeRes.writeHead(200, { ...SSE_HEADERS, "x-request-id": facts.requestId ?? "" });
      const end = await relayStream(deps, ex, body, nodeRes, {
        detail,
        includeUsage: req.stream_options?.include_usage === true,
        signal: gone,
        onFirstToken: () => (facts.ttftMs = performance.now() - started),
      });
      deps.observer.upstreamFinished(channel, model.model, end.clientGone ? "aborted" : end.error instanceof UpstreamError ? end.error.outcome : end.error ? "http_error" : "ok");
      if (end.settled) recordTokens(facts, end.settled);
      facts.errorCode = end.error?.code ?? (end.clientGone ? "client_closed" : undefined);
      return HANDLED;
    } catch (err) {
      if (ex?.channel) {
        facts.channel = ex.channel;
        await settleFailure(deps, ex, err instanceof GatewayError ? err.status : 500);
      }
      else reservation.release();
      throw err;
    }
  };
}

/** Tries the model's channels in order; an unreachable channel is marked down and the next tried. */
async function callUpstream(deps: ChatDeps, ex: Exchange, body: Record<string, unknown>, signal: ClientGone): Promise<{ answer: UpstreamAnswer; channel: string }> {
  const candidates = deps.router.candidates(ex.model.model);
  let lastError: GatewayError | undefined;
  for (const entry of candidates) {
    ex.channel = entry.config.name;
    try {
      const answer = await entry.client.send({ body, stream: body.stream === true, signal });
      deps.router.report(entry, true);
      return { answer, channel: entry.config.name };
    } catch (err) {
      const error = signal.aborted ? new UpstreamError(499, "client_closed", "The client closed the request.", "aborted") : mapTransportError(err, ex.model.model);
      const outcome = error instanceof UpstreamError ? error.outcome : "http_error";
      deps.observer.upstreamFinished(entry.config.name, ex.model.model, outcome);
      if (outcome === "unreachable" || outcome === "timeout") deps.router.report(entry, false);
      lastError = error;
      if (outcome !== "unreachable" || signal.aborted) break;
    }
  }
  throw lastError ?? new GatewayError(404, "model_not_found", `No channel serves ${ex.model.model}.`);
}

function upstreamBody(req: ChatRequest, model: ModelConfig, limited: LimitedChat): Record<string, unknown> {
  const { chatId, detail, variables, shareId, outLinkUid, max_completion_tokens, stream_options, temperature, ...rest } = req;
  const body: Record<string, unknown> = { ...rest, model: model.model, messages: limited.messages, max_tokens: limited.maxTokens };
  if (limited.temperature !== undefined) body.temperature = limited.temperature;
  // usage is always asked for, so tokens are the model's own count; hidden later if the client did not ask
  if (req.stream) body.stream_options = { ...(stream_options ?? {}), include_usage: true };
  return body;
}

async function loadHistory(store: Store, caller: Caller, chatId: string, uid: string | undefined): Promise<ChatMessage[]> {
  const chat = await store.getChat(caller.app.id, chatId);
  if (!chat) return [];
  if (caller.share) assertChatOwner(chat, caller.share.link.shareId, uid, "chatId");
  const messages = await store.loadMessages(caller.app.id, chatId, caller.app.history * 2);
  return messages.map((m) => ({ role: m.role, content: m.content }));
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
}
