// What a legacy completion used (docs/fleet.md#completions), for the pipeline to settle: tokens —
// the upstream's usage, else counted (the prompts as the limits counted them, and every choice's
// text, an echoed prompt left out) — and points. Answered or cut, the request is billed for what was
// generated.
import type { Usage } from "../stream/chunk.js";
import type { ModelConfig } from "../config/schema.js";
import type { Call, PlanBase, Used } from "../metered/spec.js";
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
}

export interface SettledCompletion {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What the answer used (for the pipeline to settle), and its usage as the client reads it. */
export async function completionUsed(call: CompletionsCall, plan: CompletionsPlan, out: CompletionOutcome): Promise<{ used: Used; usage: SettledCompletion }> {
  const { model, req } = call;
  const reported: Usage | undefined = reportedUsage(out.usage);
  const inputTokens = reported?.prompt_tokens ?? (await plan.limited.countPrompt());
  const outputTokens = reported?.completion_tokens ?? (await countChoices(out.texts(), req, model));
  const cachedTokens = cachedTokensOf(out.usage, inputTokens);
  const points = computePoints(model, inputTokens, outputTokens, cachedTokens);
  const usage = { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
  return { used: { inputTokens, outputTokens, cachedTokens, points, finishReason: out.finishReason }, usage };
}
