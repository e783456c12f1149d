// The Responses API dialect of the metered pipeline (docs/codex.md#how-sluice-serves-it): the request
// translated into a chat request — after the stored conversation of `previous_response_id`, if any,
// is read for the caller (its app's, and its key's unless the app shares its chats) — and the answer
// back, whole or as events. With `store` (the default), the response is kept with its conversation
// for `responses.retentionDays`, written with the request's usage row, within the app's quota and
// the size one response may take (docs/codex.md#store-and-previous_response_id).
import type { ChatDialect } from "../../chat/dialect.js";
import type { Config } from "../../config/schema.js";
import type { Caller } from "../../metered/caller.js";
import type { Store } from "../../store/types.js";
import { toResponse } from "./answer.js";
import { previousResponseNotFound, storedResponseTooLarge, storeQuotaExceeded } from "./errors.js";
import { parseResponsesRequest, type ResponsesRequest } from "./request-schema.js";
import type { ResponseObject } from "./response-object.js";
import { conversationOf, isResponseId, storedRow, storedScope } from "./stored.js";
import { createResponsesStream } from "./stream.js";
import { translateRequest, type ResponsesCtx } from "./to-chat.js";

export interface ResponsesDialectDeps {
  store: Store;
  /** how long a response is kept, the most bytes one may take, and what an app may keep */
  limits: Config["responses"];
}

export function createResponsesDialect(deps: ResponsesDialectDeps): ChatDialect<ResponsesRequest, ResponsesCtx> {
  const { limits } = deps;
  return {
    credential: (headers) => headers.get("authorization"),
    parse: parseResponsesRequest,
    model: (req) => req.model,
    streams: (req) => req.stream === true,
    async toChat(req, caller) {
      const now = Date.now();
      const { appId, keyName } = storedScope(caller.app, caller.key?.name);
      const id = req.previous_response_id;
      const previous = id && isResponseId(id) ? await deps.store.getResponse(appId, id, now, keyName) : undefined;
      if (req.previous_response_id && !previous) throw previousResponseNotFound();
      const translated = translateRequest(req, previous ? conversationOf(previous) : []);
      if (translated.ctx.store) await assertRoom(deps, caller, translated.ctx, now);
      return translated;
    },
    answer: toResponse,
    stream: createResponsesStream,
    session: (req) => req.prompt_cache_key,
    keep(ctx, answer, caller) {
      if (!answer) return undefined;
      const row = storedRow(ctx, answer as ResponseObject, { appId: caller.app.id, keyName: caller.key?.name ?? null }, { now: Date.now(), retentionDays: limits.retentionDays });
      // bytes, not UTF-16 units: a conversation in CJK text takes three bytes a character
      if (!row || Buffer.byteLength(row.input) + Buffer.byteLength(row.output) > limits.maxBytes) return undefined;
      return deps.store.saveResponse(row);
    },
  };
}

/** Before the model is called: a conversation too large to keep, or an app whose stored responses
 *  are at their quota, is refused with what to do (an answer kept nowhere would break the next
 *  `previous_response_id`). Requests in flight together may pass the quota by their own rows. */
async function assertRoom(deps: ResponsesDialectDeps, caller: Caller, ctx: ResponsesCtx, now: number): Promise<void> {
  const { limits } = deps;
  const bytes = Buffer.byteLength(JSON.stringify(ctx.conversation), "utf8");
  if (bytes > limits.maxBytes) throw storedResponseTooLarge(bytes, limits.maxBytes);
  const kept = await deps.store.responseUsage(caller.app.id, now);
  if (kept.rows >= limits.maxRowsPerApp || kept.bytes + bytes > limits.maxBytesPerApp) throw storeQuotaExceeded(caller.app.id, kept, limits);
}
