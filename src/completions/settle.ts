// A legacy completion's ending (docs/fleet.md#completions): tokens — the upstream's usage, else
// counted (the prompts as the limits counted them, and every choice's text, an echoed prompt left
// out) — points, and the usage row. Answered or cut, the request is billed for what was generated.
import type { Usage } from "../chat/attempt.js";
import type { ModelConfig } from "../config/schema.js";
import type { GatewayError } from "../http/errors.js";
import type { Meter } from "../metered/meter.js";
import type { Call, PlanBase } from "../metered/spec.js";
import { computePoints } from "../tokens/points.js";
import { cachedTokensOf } from "../tokens/usage-details.js";
import { countChoices, reportedUsage } from "./answer.js";
import type { LimitedCompletion } from "./limits.js";
import type { CompletionsRequest } from "./request-schema.js";

export interface CompletionsPlan extends PlanBase {
  limited: LimitedCompletion;
  /** the upstream's JSON body */
  body: string;
  stream: boolean;
  /** the client asked for the usage chunk */
  includeUsage: boolean;
}

export type CompletionsCall = Call<CompletionsRequest, ModelConfig>;

export interface CompletionOutcome {
  /** every choice's text; a function: a relayed stream recovers them only when needed */
  texts: () => string[];
  usage: unknown;
  finishReason: string;
  cut?: GatewayError;
}

export interface SettledCompletion {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export async function settleCompletion(call: CompletionsCall, plan: CompletionsPlan, meter: Meter, out: CompletionOutcome): Promise<SettledCompletion> {
  const { model, req } = call;
  const reported: Usage | undefined = reportedUsage(out.usage);
  const inputTokens = reported?.prompt_tokens ?? (await plan.limited.countPrompt());
  const outputTokens = reported?.completion_tokens ?? (await countChoices(out.texts(), req, model));
  const points = computePoints(model, inputTokens, outputTokens);
  const cachedTokens = cachedTokensOf(out.usage, inputTokens);
  await meter.settle({ inputTokens, outputTokens, cachedTokens, points, finishReason: out.finishReason, cut: out.cut });
  return { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
}
