// Serve until spent for the kinds priced by tokens (docs/api.md#budgets): chat (and its dialects)
// and legacy completions ask for `answers` answers of up to `maxTokens` tokens each after a prompt.
// Their worst case is the prompt and every answer's max_tokens — in points for the budgets, in
// tokens for tokens per minute; the least they are served for, the prompt and one token each; a
// smaller hold lowers max_tokens to what it pays for.
import type { ModelConfig } from "../config/schema.js";
import { computePoints } from "../tokens/points.js";
import type { Caller } from "./caller.js";
import { budgeted, type Held, type WorstCase } from "./quota.js";

export interface TokenAsk {
  /** the prompt's tokens at most (from its bytes) */
  promptBound: number;
  /** the prompt's tokens, counted (only when the bound does not fit a budget) */
  countPrompt(): Promise<number>;
  /** choices (chat's `n`), or prompts × `n` (completions) */
  answers: number;
  maxTokens: number;
}

/** The most the request can cost and the least it can be served for; 0 when nothing limits it. */
export function tokenWorstCase(caller: Caller, model: ModelConfig, ask: TokenAsk): WorstCase | number {
  if (!budgeted(caller.limits, { tokens: true })) return 0;
  const maxOut = ask.answers * ask.maxTokens;
  return {
    bound: computePoints(model, ask.promptBound, maxOut),
    least: computePoints(model, ask.promptBound, ask.answers),
    tokens: { bound: ask.promptBound + maxOut, least: ask.promptBound + ask.answers },
    counted: async () => {
      const prompt = await ask.countPrompt();
      return {
        most: computePoints(model, prompt, maxOut),
        least: computePoints(model, prompt, ask.answers),
        tokens: { most: prompt + maxOut, least: prompt + ask.answers },
      };
    },
  };
}

/**
 * The max_tokens a hold pays for — `held` points and `heldTokens` tokens — with the prompt counted
 * exactly (the answers then end `length`); undefined when the hold covers the worst case, or
 * max_tokens as asked. The hold always covers the prompt and one token per answer.
 */
export async function affordedMaxTokens(model: ModelConfig, ask: TokenAsk, hold: Held): Promise<number | undefined> {
  const perToken = computePoints(model, 0, ask.answers);
  const pointsShort = perToken > 0 && hold.held < computePoints(model, ask.promptBound, ask.answers * ask.maxTokens);
  const tokensShort = hold.heldTokens < ask.promptBound + ask.answers * ask.maxTokens;
  if (!pointsShort && !tokensShort) return undefined;
  const prompt = await ask.countPrompt();
  let tokens = Number.POSITIVE_INFINITY;
  // a hair under the exact quotient: a float just below a whole number must not round the answer up
  if (pointsShort) tokens = Math.floor((hold.held - computePoints(model, prompt, 0)) / perToken + 1e-9);
  if (tokensShort) tokens = Math.min(tokens, Math.floor((hold.heldTokens - prompt) / ask.answers));
  if (tokens >= ask.maxTokens) return undefined;
  return Math.max(ask.maxTokens === 0 ? 0 : 1, tokens);
}
