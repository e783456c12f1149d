// The upstream's whole chat.completion → the Response object (docs/codex.md#what-sluice-answers):
// its reasoning as a reasoning item with a summary, its text as a message item, its tool calls as
// function_call (or custom_tool_call) items named the way the client named the tools.
import type { CompletionJson } from "../../chat/attempt.js";
import { newId } from "./ids.js";
import { finishStatus, messageItem, reasoningItem, responseObject, responseUsage, toolCallItem, type OutputItem, type ResponseObject } from "./response-object.js";
import { clientName } from "./tools.js";
import type { ResponsesCtx } from "./to-chat.js";
import type { ChatAnswerMessage, DialectUsage } from "./types.js";

export function toResponse(completion: CompletionJson, usage: DialectUsage, ctx: ResponsesCtx): ResponseObject {
  const choice = completion.choices[0];
  const message = (choice?.message ?? {}) as ChatAnswerMessage;
  const { status, incomplete_details } = finishStatus(choice?.finish_reason);
  const output: OutputItem[] = [];

  const reasoning = message.reasoning_content ?? message.reasoning;
  if (reasoning) output.push(reasoningItem(newId("rs"), reasoning));
  if (message.content) output.push(messageItem(newId("msg"), message.content, status));
  for (const call of message.tool_calls ?? []) {
    const name = clientName(ctx.tools, call.function?.name ?? "");
    output.push(toolCallItem(call.id || newId("call"), name, call.function?.arguments ?? "", "completed"));
  }
  return responseObject(ctx, { status, output, usage: responseUsage(usage), incomplete_details });
}
