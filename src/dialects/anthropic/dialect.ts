// The Anthropic Messages dialect of the metered pipeline (docs/claude-code.md#how-sluice-serves-it):
// a request translation into the chat request, and answer, stream and error translations out of the
// upstream's Chat Completions answer. Everything else — keys, limits, budgets, failover, usage — is
// the chat path's.
import type { ChatRequest } from "../../chat/request-schema.js";
import type { GatewayError } from "../../http/errors.js";
import type { CompletionJson } from "../../chat/attempt.js";
import { toAnswer } from "./answer.js";
import { anthropicError } from "./errors.js";
import { createStreamTranslator } from "./stream.js";
import { toChat, type MessagesCtx } from "./to-chat.js";
import type { DialectError, DialectUsage, StreamTranslator } from "./types.js";

export interface ChatDialect<Ctx> {
  route: string;
  readKey(headers: Headers): string | undefined;
  toChat(body: unknown): { chat: ChatRequest; ctx: Ctx };
  answer(completion: CompletionJson, usage: DialectUsage, ctx: Ctx): unknown;
  stream(ctx: Ctx): StreamTranslator;
  error(err: GatewayError): DialectError;
}

export const anthropicDialect: ChatDialect<MessagesCtx> = {
  route: "messages",
  readKey: readAnthropicKey,
  toChat,
  answer: toAnswer,
  stream: createStreamTranslator,
  error: anthropicError,
};

/** Claude Code (and SDKs before 1.x) send `x-api-key`; the 1.x SDKs, and Claude Code given
 *  ANTHROPIC_AUTH_TOKEN, send `Authorization: Bearer`. */
export function readAnthropicKey(headers: Headers): string | undefined {
  const apiKey = headers.get("x-api-key")?.trim();
  if (apiKey) return apiKey;
  const auth = headers.get("authorization")?.trim();
  const m = auth ? /^Bearer\s+(\S+)$/i.exec(auth) : null;
  return m ? m[1] : undefined;
}
