// The Responses API dialect (docs/codex.md): a request translation into a chat request and the answer
// and stream translations back, for the one metered pipeline. `previous_response_id` needs the store
// before translating: the pipeline parses, loads the stored conversation, then translates.
export { createResponsesDialect } from "./dialect.js";
export { createResponseRoutes } from "./routes.js";

export { toResponse } from "./answer.js";
export { previousResponseNotFound, responseNotFound } from "./errors.js";
export { parseResponsesRequest, type InputItem, type ResponsesRequest } from "./request-schema.js";
export type { ResponseObject } from "./response-object.js";
export { conversationOf, deletedResponse, storedResponse, storedRow, type StoredResponseRow } from "./stored.js";
export { createResponsesStream, type ResponsesStream } from "./stream.js";
export { toChat, translateRequest, type ResponsesCtx } from "./to-chat.js";
