// A non-stream answer: the upstream's chat.completion with real usage, id = chatId when given, and
// `responseData` and `newVariables` for detail.
import { jsonResponse } from "../http/json.js";
import type { CompletionJson } from "../upstream/types.js";
import { clientReport, settleAnswer, type Exchange, type SettleDeps, type Settled } from "./settle.js";

export async function respondJson(deps: SettleDeps, ex: Exchange, completion: CompletionJson, withDetail: boolean): Promise<{ response: Response; settled: Settled }> {
  const choice = completion.choices[0];
  const settled = await settleAnswer(deps, ex, {
    text: () => choice?.message?.content ?? "",
    usage: completion.usage,
    finishReason: () => choice?.finish_reason ?? "stop",
  });
  settled.finishReason = choice?.finish_reason ?? "stop";
  const body: CompletionJson = {
    ...completion,
    id: ex.chatId ?? completion.id,
    model: completion.model ?? ex.model.model,
    usage: {
      prompt_tokens: settled.inputTokens,
      completion_tokens: settled.outputTokens,
      total_tokens: settled.inputTokens + settled.outputTokens,
    },
  };
  if (withDetail) {
    body.responseData = [clientReport(ex, settled)];
    body.newVariables = ex.variables;
  }
  return { response: jsonResponse(body), settled };
}
