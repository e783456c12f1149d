// The Responses API dialect of the metered pipeline (docs/codex.md#how-sluice-serves-it): the request
// translated into a chat request — after the stored conversation of `previous_response_id`, if any,
// is read for the caller's app — and the answer back, whole or as events. With `store` (the
// default), the response is kept with its conversation for `responses.retentionDays`, written with
// the request's usage row; a conversation larger than the body limit is not kept (a chain of small
// requests cannot grow one without bound).
import type { ChatDialect } from "../../chat/dialect.js";
import type { Store } from "../../store/types.js";
import { toResponse } from "./answer.js";
import { previousResponseNotFound } from "./errors.js";
import { parseResponsesRequest, type ResponsesRequest } from "./request-schema.js";
import type { ResponseObject } from "./response-object.js";
import { conversationOf, storedRow } from "./stored.js";
import { createResponsesStream } from "./stream.js";
import { translateRequest, type ResponsesCtx } from "./to-chat.js";

export interface ResponsesDialectDeps {
  store: Store;
  retentionDays: number;
  /** the most bytes a kept response (its conversation and answer) may take */
  maxStoredBytes: number;
}

export function createResponsesDialect(deps: ResponsesDialectDeps): ChatDialect<ResponsesRequest, ResponsesCtx> {
  return {
    credential: (headers) => headers.get("authorization"),
    parse: parseResponsesRequest,
    model: (req) => req.model,
    streams: (req) => req.stream === true,
    async toChat(req, caller) {
      if (!req.previous_response_id) return translateRequest(req);
      const previous = await deps.store.getResponse(caller.app.id, req.previous_response_id, Date.now());
      if (!previous) throw previousResponseNotFound();
      return translateRequest(req, conversationOf(previous));
    },
    answer: toResponse,
    stream: createResponsesStream,
    session: (req) => req.prompt_cache_key,
    keep(ctx, answer, caller) {
      if (!answer) return undefined;
      const row = storedRow(ctx, answer as ResponseObject, { appId: caller.app.id, keyName: caller.key?.name ?? null }, { now: Date.now(), retentionDays: deps.retentionDays });
      // bytes, not UTF-16 units: a conversation in CJK text takes three bytes a character
      if (!row || Buffer.byteLength(row.input) + Buffer.byteLength(row.output) > deps.maxStoredBytes) return undefined;
      return deps.store.saveResponse(row);
    },
  };
}
