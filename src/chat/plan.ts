// What a chat request asks of its model once its limits are applied (docs/api.md#chat): the
// operator's before-chat check for share-link users, the conversation's history and variables, the
// model's limits and the max_tokens the budgets pay for. Nothing here reaches a channel; the body
// the upstream gets is made by the attempt (src/chat/attempt.ts).
import type { ModelConfig } from "../config/schema.js";
import { badRequest } from "../http/errors.js";
import type { Caller } from "../metered/caller.js";
import type { Held } from "../metered/quota.js";
import type { Call, PlanBase } from "../metered/spec.js";
import { affordedMaxTokens, tokenWorstCase, type TokenAsk } from "../metered/token-budget.js";
import type { ShareAuth } from "../share/callbacks.js";
import { chatNotOwned, usageUser } from "../share/links.js";
import type { ChatOwner, Store } from "../store/types.js";
import { lastUserText } from "../tokens/counter.js";
import { historyCounts } from "../tokens/history-counts.js";
import type { KnownCounts } from "../tokens/tally.js";
import { applyLimits, type LimitedChat } from "./limits.js";
import type { ChatMessage, ChatRequest } from "./request-schema.js";
import { shareRequest } from "./upstream-body.js";
import { createPromptFiller, mergeVariables, type Variables } from "./variables.js";

export interface ChatPlan extends PlanBase {
  /** the request as it is served: a share-link user's reduced to FastGPT's share-link request */
  req: ChatRequest;
  limited: LimitedChat;
  /** choices asked for (`n`): every one can write max_tokens */
  choices: number;
  /** the upstream's JSON body: made by the first attempt, once the budgets are held (a request
   *  refused there never pays for it, and max_tokens is final) */
  body?: string | Buffer;
  stream: boolean;
  /** FastGPT's detail answer: the completion report (share links: when the link allows it) */
  detail: boolean;
  includeUsage: boolean;
  /** FastGPT variables: the chat's stored ones with the request's over them */
  variables: Variables;
  /** who the conversation (chatId) belongs to: its creator */
  owner: ChatOwner;
  /** the name the client asked for, when it was an alias: the answer carries it */
  answerModel: string | undefined;
}

export interface PlanDeps {
  store: Store;
  shareAuth: ShareAuth;
  /** the most bytes a filled-in system prompt, a chat's variables or the history read may take */
  maxBytes: number;
}

export type ChatCall = Call<ChatRequest, ModelConfig>;

/** How a dialect's chat is limited: an agent's history is never trimmed, and its counts are kept
 *  per caller (docs/api.md#limits). */
export interface PlanOptions {
  trim?: boolean;
  known?: KnownCounts;
}

export async function planChat(deps: PlanDeps, call: ChatCall, opts: PlanOptions = {}): Promise<ChatPlan> {
  const { caller, model } = call;
  const req = caller.share ? shareRequest(call.req) : call.req;
  // 1. Choices: each can write max_tokens, so they are bounded by the model (docs/api.md#budgets).
  const choices = req.n ?? 1;
  if (choices > model.maxChoices) throw badRequest("invalid_request", `n: ${model.model} answers at most ${model.maxChoices} choices per request.`, "n");

  // 2. Share-link users: the operator's before-chat check gives the uid.
  const uid = caller.share ? await deps.shareAuth.start(caller.share.link, caller.share.token, lastUserText(req.messages), caller.share.trace) : undefined;

  // 3. Conversation history and variables, then the model's limits (with the system prompt filled in).
  const owner: ChatOwner = caller.share ? { shareId: caller.share.link.shareId, uid: uid! } : { keyName: caller.key?.name ?? "" };
  const stored = req.chatId ? await openChat(deps, caller, req.chatId, owner) : undefined;
  const variables = mergeVariables(stored?.variables, req.variables, deps.maxBytes);
  const fillIn = createPromptFiller(variables, { now: new Date(call.time), maxBytes: deps.maxBytes });
  const known = req.chatId ? historyCounts.forChat(caller.app.id, req.chatId, model.tokenizer) : opts.known;
  const limited = await applyLimits(req, mergeHistory(stored?.history ?? [], req.messages), model, caller.app, { renderPrompt: fillIn, known, trim: opts.trim });

  return {
    req,
    limited,
    choices,
    stream: req.stream === true,
    detail: req.detail === true && (!caller.share || caller.share.link.responseDetail),
    includeUsage: req.stream_options?.include_usage === true,
    variables,
    owner,
    answerModel: req.model !== undefined && req.model !== model.model ? req.model : undefined,
    chatId: req.chatId,
    user: caller.share ? usageUser(caller.share.link, uid!) : undefined,
    worstCase: tokenWorstCase(caller, model, askOf(limited, choices)),
  };
}

/** What serve-until-spent needs of the request: its prompt, then max_tokens for every choice. */
const askOf = (limited: LimitedChat, choices: number): TokenAsk => ({
  promptBound: limited.promptBound,
  countPrompt: () => limited.countPrompt(),
  answers: choices,
  maxTokens: limited.maxTokens,
});

/**
 * Serve until spent (docs/api.md#budgets): when the budgets held less than the worst case, max_tokens
 * is lowered to what the hold pays for (src/metered/token-budget.ts); the answer then ends `length`.
 */
export async function affordChat(plan: ChatPlan, model: ModelConfig, held: Held): Promise<void> {
  const maxTokens = await affordedMaxTokens(model, askOf(plan.limited, plan.choices), held);
  if (maxTokens !== undefined) plan.limited.maxTokens = maxTokens;
}

/**
 * The conversation's stored turns and variables (docs/api.md#conversations): the chat is the
 * caller's (created as theirs, atomically, when new), or the caller gets 403 before any of it is
 * read; its history bounded by the app's rounds and by bytes.
 */
async function openChat(deps: PlanDeps, caller: Caller, chatId: string, owner: ChatOwner): Promise<{ history: ChatMessage[]; variables?: Variables }> {
  const who = caller.app.sharedChats && !caller.share ? null : owner;
  const opened = await deps.store.openChat(caller.app.id, chatId, who, { limit: caller.app.history * 2, maxBytes: deps.maxBytes, create: true });
  if (opened.status === "not_owned") throw chatNotOwned("chatId");
  if (opened.status === "missing") return { history: [] };
  return { history: opened.messages.map((m) => ({ role: m.role, content: m.content })), variables: opened.chat.variables };
}

/** The request's system messages first, then the stored history, then the rest of the request. */
function mergeHistory(history: ChatMessage[], messages: ChatMessage[]): ChatMessage[] {
  if (history.length === 0) return messages;
  const system = messages.filter((m) => m.role === "system");
  return [...system, ...history, ...messages.filter((m) => m.role !== "system")];
}
