// The Responses API dialect (docs/codex.md): a request translation into a chat request and the answer
// and stream translations back, for the one metered pipeline. `previous_response_id` needs the store
// before translating: the pipeline parses, loads the stored conversation, then translates.
import { toResponse } from "./answer.js";
import { responsesError } from "./errors.js";
import { createResponsesStream } from "./stream.js";
import { toChat, type ResponsesCtx } from "./to-chat.js";
import type { ChatDialect } from "./types.js";

export { toResponse } from "./answer.js";
export { previousResponseNotFound, responseNotFound, responsesError } from "./errors.js";
export { parseResponsesRequest, type InputItem, type ResponsesRequest } from "./request-schema.js";
export type { ResponseObject } from "./response-object.js";
export { conversationOf, deletedResponse, storedResponse, storedRow, type StoredResponseRow } from "./stored.js";
export { createResponsesStream, type ResponsesStream } from "./stream.js";
export { toChat, translateRequest, type ResponsesCtx } from "./to-chat.js";

export const responsesDialect: ChatDialect<ResponsesCtx> = {
  route: "responses",
  readKey: (headers) => /^Bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "")?.[1],
  toChat: (body) => toChat(body),
  answer: toResponse,
  stream: createResponsesStream,
  error: responsesError,
};
