// A non-stream answer: the upstream's chat.completion with real usage, id = chatId when given, and
// `responseData` and `newVariables` for detail (docs/api.md#chat).
import { jsonResponse } from "../http/json.js";
import type { Meter } from "../metered/meter.js";
import type { CompletionJson } from "./attempt.js";
import type { ChatCall, ChatPlan } from "./plan.js";
import { clientReport, settleChat, type SettleDeps } from "./settle.js";

export async function respondJson(deps: SettleDeps, call: ChatCall, plan: ChatPlan, meter: Meter, completion: CompletionJson): Promise<Response> {
  const choice = completion.choices[0];
  const settled = await settleChat(deps, call, plan, meter, {
    text: () => choice?.message?.content ?? "",
    usage: completion.usage,
    finishReason: () => choice?.finish_reason ?? "stop",
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
  if (plan.detail) {
    body.responseData = [clientReport(call, settled)];
    body.newVariables = plan.variables;
  }
  return jsonResponse(body);
}
