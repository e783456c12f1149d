// The Anthropic Messages dialect of the metered pipeline (docs/claude-code.md#how-sluice-serves-it):
// a request translation into the chat request, and answer and stream translations out of the
// upstream's Chat Completions answer. Everything else — keys, limits, budgets, failover, usage — is
// the chat path's; errors are worded by ./errors.ts (the route table gives it to this route).
import { asBearer, type ChatDialect } from "../../chat/dialect.js";
import { toAnswer } from "./answer.js";
import { parseMessagesRequest, type MessagesRequest } from "./request-schema.js";
import { createStreamTranslator } from "./stream.js";
import { buildChat, type MessagesCtx } from "./to-chat.js";

export const anthropicDialect: ChatDialect<MessagesRequest, MessagesCtx> = {
  credential: (headers) => asBearer(readAnthropicKey(headers)),
  parse: parseMessagesRequest,
  model: (req) => req.model,
  streams: (req) => req.stream === true,
  toChat: async (req) => buildChat(req),
  answer: toAnswer,
  stream: createStreamTranslator,
  // Claude Code puts its session in metadata.user_id
  session: (req) => req.metadata?.user_id,
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
