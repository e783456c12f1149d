// Serve until spent for the kinds priced by tokens (docs/api.md#budgets): chat (and its dialects)
// and legacy completions ask for `answers` answers of up to `maxTokens` tokens each after a prompt.
// Their worst case is the prompt and every answer's max_tokens; the least they are served for, the
// prompt and one token each; a smaller hold lowers max_tokens to what it pays for.
import type { ModelConfig } from "../config/schema.js";
import { computePoints } from "../tokens/points.js";
import type { Caller } from "./caller.js";
import type { WorstCase } from "./quota.js";

export interface TokenAsk {
  /** the prompt's tokens at most (from its bytes) */
  promptBound: number;
  /** the prompt's tokens, counted (only when the bound does not fit a budget) */
  countPrompt(): Promise<number>;
  /** choices (chat's `n`), or prompts × `n` (completions) */
  answers: number;
  maxTokens: number;
}

/** The most the request can cost and the least it can be served for; 0 when no budget limits it. */
export function tokenWorstCase(caller: Caller, model: ModelConfig, ask: TokenAsk): WorstCase | number {
  if (!caller.limits.some((l) => l.maxUsagePoints >= 0)) return 0;
  const maxOut = ask.answers * ask.maxTokens;
  return {
    bound: computePoints(model, ask.promptBound, maxOut),
    least: computePoints(model, ask.promptBound, ask.answers),
    counted: async () => {
      const prompt = await ask.countPrompt();
      return { most: computePoints(model, prompt, maxOut), least: computePoints(model, prompt, ask.answers) };
    },
  };
}

/**
 * The max_tokens `held` points pay for, with the prompt counted exactly (the answers then end
 * `length`); undefined when the hold covers the worst case, or max_tokens as asked. The hold always
 * covers the prompt and one token per answer.
 */
export async function affordedMaxTokens(model: ModelConfig, ask: TokenAsk, held: number): Promise<number | undefined> {
  const perToken = computePoints(model, 0, ask.answers);
  if (perToken <= 0 || held >= computePoints(model, ask.promptBound, ask.answers * ask.maxTokens)) return undefined;
  const prompt = computePoints(model, await ask.countPrompt(), 0);
  // a hair under the exact quotient: a float just below a whole number must not round the answer up
  const tokens = Math.floor((held - prompt) / perToken + 1e-9);
  if (tokens >= ask.maxTokens) return undefined;
  return Math.max(ask.maxTokens === 0 ? 0 : 1, tokens);
}
