// What a chat request asks of its model once its limits are applied (docs/api.md#chat): the
// operator's before-chat check for share-link users, the conversation's history and variables, the
// model's limits, and the body the upstream gets. Nothing here reaches a channel.
import type { ModelConfig } from "../config/schema.js";
import { jsonBody } from "../http/raw-text.js";
import type { Caller } from "../metered/caller.js";
import { computePoints } from "../tokens/points.js";
import type { WorstCase } from "../metered/quota.js";
import type { Call, PlanBase } from "../metered/spec.js";
import type { ShareAuth } from "../share/callbacks.js";
import { assertChatOwner } from "../share/links.js";
import type { Store } from "../store/types.js";
import { lastUserText } from "../tokens/counter.js";
import { historyCounts } from "../tokens/history-counts.js";
import { applyLimits, type LimitedChat } from "./limits.js";
import type { ChatMessage, ChatRequest } from "./request-schema.js";
import { createPromptFiller, mergeVariables, type Variables } from "./variables.js";

export interface ChatPlan extends PlanBase {
  limited: LimitedChat;
  /** the upstream's JSON body */
  body: string | Buffer;
  stream: boolean;
  /** FastGPT's detail answer: the completion report (share links: when the link allows it) */
  detail: boolean;
  includeUsage: boolean;
  /** FastGPT variables: the chat's stored ones with the request's over them */
  variables: Variables;
  /** share-link users: the uid the operator (or the localId) gave */
  uid: string | undefined;
}

export interface PlanDeps {
  store: Store;
  shareAuth: ShareAuth;
  /** the most bytes a filled-in system prompt or a chat's variables may take */
  maxBytes: number;
}

export type ChatCall = Call<ChatRequest, ModelConfig>;

export async function planChat(deps: PlanDeps, call: ChatCall): Promise<ChatPlan> {
  const { req, caller, model } = call;
  // 1. Share-link users: the operator's before-chat check gives the uid.
  const uid = caller.share ? await deps.shareAuth.start(caller.share.link, caller.share.token, lastUserText(req.messages)) : undefined;

  // 2. Conversation history and variables, then the model's limits (with the system prompt filled in).
  const stored = req.chatId ? await loadChat(deps.store, caller, req.chatId, uid) : undefined;
  const variables = mergeVariables(stored?.variables, req.variables, deps.maxBytes);
  const fillIn = createPromptFiller(variables, { now: new Date(call.time), maxBytes: deps.maxBytes });
  const known = req.chatId ? historyCounts.forChat(caller.app.id, req.chatId, model.tokenizer) : undefined;
  const limited = await applyLimits(req, mergeHistory(stored?.history ?? [], req.messages), model, caller.app, { renderPrompt: fillIn, known });

  return {
    limited,
    body: jsonBody(upstreamBody(req, model, limited)),
    stream: req.stream === true,
    detail: req.detail === true && (!caller.share || caller.share.link.responseDetail),
    includeUsage: req.stream_options?.include_usage === true,
    variables,
    uid,
    chatId: req.chatId,
    worstCase: worstCase(caller, model, limited),
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
  // fields only FastGPT reads never reach the upstream (docs/api.md#chat): some upstreams reject unknown fields
  const { chatId, detail, variables, shareId, outLinkUid, appId, responseChatItemId, customUid, metadata, retainDatasetCite, max_completion_tokens, stream_options, temperature, ...rest } = req;
  const body: Record<string, unknown> = { ...rest, model: model.model, messages: limited.messages, max_tokens: limited.maxTokens };
  if (limited.temperature !== undefined) body.temperature = limited.temperature;
  // usage is always asked for, so tokens are the model's own count; hidden later if the client did not ask
  if (req.stream) body.stream_options = { ...(stream_options ?? {}), include_usage: true };
  return body;
}

async function loadChat(store: Store, caller: Caller, chatId: string, uid: string | undefined): Promise<{ history: ChatMessage[]; variables?: Variables }> {
  // the chat and its messages in one read (one statement on PostgreSQL); the messages are used only
  // once the chat is known to be the caller's
  const found = await store.getChatWithMessages(caller.app.id, chatId, caller.app.history * 2);
  if (!found) return { history: [] };
  if (caller.share) assertChatOwner(found.chat, caller.share.link.shareId, uid, "chatId");
  return { history: found.messages.map((m) => ({ role: m.role, content: m.content })), variables: found.chat.variables };
}

/** The request's system messages first, then the stored history, then the rest of the request. */
function mergeHistory(history: ChatMessage[], messages: ChatMessage[]): ChatMessage[] {
  if (history.length === 0) return messages;
  const system = messages.filter((m) => m.role === "system");
  return [...system, ...history, ...messages.filter((m) => m.role !== "system")];
}
