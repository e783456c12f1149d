// The Anthropic Messages dialect of the metered pipeline (docs/claude-code.md#how-sluice-serves-it):
// a request translation into the chat request, and answer and stream translations out of the
// upstream's Chat Completions answer. Everything else — keys, limits, budgets, failover, usage — is
// the chat path's; errors are worded by ./errors.ts (the route table gives it to this route). A
// message thread's conversation is read before the translation and kept with the usage row (./thread.ts).
import { asBearer, type ChatDialect } from "../../chat/dialect.js";
import { toAnswer } from "./answer.js";
import { parseMessagesRequest, type MessagesRequest } from "./request-schema.js";
import { createStreamTranslator } from "./stream.js";
import { keepable, openThread, threadRow, type ThreadAnswer, type ThreadDeps } from "./thread.js";
import { buildChat, type MessagesCtx } from "./to-chat.js";

export function createAnthropicDialect(deps: ThreadDeps): ChatDialect<MessagesRequest, MessagesCtx> {
  return {
    credential: (headers) => asBearer(readAnthropicKey(headers)),
    parse: parseMessagesRequest,
    model: (req) => req.model,
    streams: (req) => req.stream === true,
    async toChat(req, caller) {
      const opened = await openThread(deps, req, caller);
      const translated = buildChat(opened.req);
      if (opened.thread) translated.ctx.thread = await keepable(deps, opened.thread);
      return translated;
    },
    answer: toAnswer,
    stream: createStreamTranslator,
    // Claude Code puts its session in metadata.user_id
    session: (req) => req.metadata?.user_id,
    keep(ctx, answer) {
      const row = ctx.thread && answer ? threadRow(deps, ctx.thread, answer as ThreadAnswer) : undefined;
      return row ? deps.store.saveResponse(row) : undefined;
    },
  };
}

/** Claude Code (and SDKs before 1.x) send `x-api-key`; the 1.x SDKs, and Claude Code given
 *  ANTHROPIC_AUTH_TOKEN, send `Authorization: Bearer`. */
export function readAnthropicKey(headers: Headers): string | undefined {
  const apiKey = headers.get("x-api-key")?.trim();
  if (apiKey) return apiKey;
  const auth = headers.get("authorization")?.trim();
  const m = auth ? /^Bearer\s+(\S+)$/i.exec(auth) : null;
  return m ? m[1] : undefined;
}
