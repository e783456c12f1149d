// `POST /v1/messages/count_tokens` (docs/claude-code.md#count-tokens): the input tokens of a
// Messages request, counted with the model's tokenizer on the translated chat request — no upstream
// call, nothing billed. The count is the one the chat limits refuse a prompt with ("prompt is too
// long: N tokens"): each message as role + "\n" + text (+ its tool calls' names and arguments), + 4,
// and the tool definitions as one more system message. Claude Code asks it for the size of its tools.
import { countCeiling, countToCeiling, toolsMessage } from "../../chat/limits.js";
import type { ChatMessage, ChatRequest } from "../../chat/request-schema.js";
import type { TokenizerName } from "../../tokens/counter.js";
import { createTally } from "../../tokens/tally.js";
import { buildChat, type MessagesCtx } from "./to-chat.js";
import { parseCountTokensRequest } from "./request-schema.js";

/** The count_tokens body (a Messages body without `max_tokens`) as the chat request it would be. */
export function toCountChat(body: unknown): { chat: ChatRequest; ctx: MessagesCtx } {
  return buildChat(parseCountTokensRequest(body));
}

/** The input tokens, counted no further than twice the model's context (countCeiling), which a
 *  longer prompt is given as: the figure its refusal gives ("prompt is too long: N tokens"). */
export async function countInputTokens(chat: { messages: ChatMessage[]; tools?: unknown }, model: { tokenizer: TokenizerName; maxContext: number }): Promise<number> {
  const counted = chat.tools === undefined ? chat.messages : [...chat.messages, toolsMessage(chat.tools)];
  return countToCeiling(createTally(counted, model.tokenizer).group(counted.keys()), countCeiling(model));
}
