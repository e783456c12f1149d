// A non-stream answer: the upstream's chat.completion with real usage, id = chatId when given, and
// `responseData` and `newVariables` for detail (docs/api.md#chat).
import { jsonResponse } from "../http/json.js";
import type { Whole } from "../metered/spec.js";
import { answerNames } from "../stream/chunk.js";
import type { CompletionJson } from "./attempt.js";
import type { ChatCall, ChatPlan } from "./plan.js";
import { addReasoningContent, readsReasoningContent } from "./reasoning.js";
import { chatUsed, clientReport, type SettleDeps } from "./settle.js";

export async function respondJson(deps: SettleDeps, call: ChatCall, plan: ChatPlan, completion: CompletionJson): Promise<Whole> {
  const choice = completion.choices[0];
  const { used, settled } = await chatUsed(deps, call, plan, {
    text: () => choice?.message?.content ?? "",
    usage: completion.usage,
    finishReason: () => choice?.finish_reason ?? "stop",
    names: answerNames(completion),
  });
  const body: CompletionJson = {
    ...completion,
    id: plan.chatId ?? completion.id,
    model: plan.answerModel ?? completion.model ?? call.model.model,
    usage: {
      prompt_tokens: settled.inputTokens,
      completion_tokens: settled.outputTokens,
      total_tokens: settled.inputTokens + settled.outputTokens,
      // the prefix cache's hits, when the upstream reports them (docs/routing.md#cached-tokens)
      ...(completion.usage?.prompt_tokens_details ? { prompt_tokens_details: { cached_tokens: settled.cachedTokens } } : {}),
    },
  };
  if (readsReasoningContent(call)) addReasoningContent(body);
  if (plan.detail) {
    body.responseData = [clientReport(call, settled)];
    body.newVariables = plan.variables;
  }
  return { used, reply: () => jsonResponse(body) };
}
