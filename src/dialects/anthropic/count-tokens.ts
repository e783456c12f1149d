// `POST /v1/messages/count_tokens` (docs/claude-code.md#count-tokens): the input tokens of a
// Messages request, counted with the model's tokenizer on the translated chat request — no upstream
// call, nothing billed. Messages count as the chat path counts them (role + "\n" + text, + 4); the
// tool definitions and the arguments of earlier tool calls, which the model reads too, are added:
// Claude Code asks this endpoint for the size of its tools.
import type { ChatMessage, ChatRequest } from "../../chat/request-schema.js";
import { countedText, countTextAsync, createPacer, MESSAGE_OVERHEAD, type TokenizerName } from "../../tokens/counter.js";
import { buildChat, type MessagesCtx } from "./to-chat.js";
import { parseCountTokensRequest } from "./request-schema.js";

/** The count_tokens body (a Messages body without `max_tokens`) as the chat request it would be. */
export function toCountChat(body: unknown): { chat: ChatRequest; ctx: MessagesCtx } {
  return buildChat(parseCountTokensRequest(body));
}

export async function countInputTokens(chat: { messages: ChatMessage[]; tools?: unknown }, tokenizer: TokenizerName): Promise<number> {
  const pacer = createPacer();
  const count = (text: string) => countTextAsync(text, tokenizer, { pacer });
  let total = 0;
  for (const m of chat.messages) {
    total += (await count(countedText(m))) + MESSAGE_OVERHEAD;
    for (const call of toolCalls(m)) total += await count(`${call.function?.name ?? ""}\n${call.function?.arguments ?? ""}`);
  }
  if (Array.isArray(chat.tools) && chat.tools.length > 0) total += await count(JSON.stringify(chat.tools));
  return total;
}

type ToolCallShape = { function?: { name?: string; arguments?: string } };

function toolCalls(m: ChatMessage): ToolCallShape[] {
  return Array.isArray(m.tool_calls) ? (m.tool_calls as ToolCallShape[]) : [];
}
