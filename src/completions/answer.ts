// A legacy completion's answer (docs/fleet.md#completions): the upstream's `text_completion`
// checked for its shape, given the model name the client asked for, and its usage — the upstream's,
// else counted: the prompts (./limits.ts) and every choice's text, an echoed prompt left out.
import type { ModelConfig } from "../config/schema.js";
import { countTextAsync, createPacer } from "../tokens/counter.js";
import type { Usage } from "../stream/chunk.js";
import { promptList, type CompletionsRequest } from "./request-schema.js";

export interface TextCompletion {
  id?: string;
  object?: string;
  model?: string;
  choices: Array<{ index?: number; text: string; finish_reason?: string | null; [key: string]: unknown }>;
  usage?: Usage | null;
  [key: string]: unknown;
}

/** The answer when it is a text completion (every choice has a `text`); undefined otherwise. */
export function readTextCompletion(answer: unknown): TextCompletion | undefined {
  if (!answer || typeof answer !== "object" || Array.isArray(answer)) return undefined;
  const choices = (answer as { choices?: unknown }).choices;
  if (!Array.isArray(choices) || !choices.every((c) => !!c && typeof c === "object" && typeof (c as { text?: unknown }).text === "string")) return undefined;
  return answer as TextCompletion;
}

/** The upstream's usage when it reports a usable one. */
export function reportedUsage(usage: unknown): Usage | undefined {
  const u = usage as Partial<Usage> | null | undefined;
  const whole = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0;
  return u && whole(u.prompt_tokens) && whole(u.completion_tokens) ? { prompt_tokens: u.prompt_tokens!, completion_tokens: u.completion_tokens! } : undefined;
}

/**
 * Tokens of the answers' texts. With `echo`, each text begins with its prompt (choice i answers
 * prompt floor(i / n)): that part was counted as prompt and is left out.
 */
export async function countChoices(texts: string[], req: CompletionsRequest, model: ModelConfig): Promise<number> {
  const prompts = promptList(req.prompt);
  const n = req.n ?? 1;
  const pacer = createPacer();
  let total = 0;
  for (const [i, text] of texts.entries()) {
    const prompt = prompts[Math.floor(i / n)];
    const own = req.echo && typeof prompt === "string" && text.startsWith(prompt) ? text.slice(prompt.length) : text;
    total += await countTextAsync(own, model.tokenizer, { pacer });
  }
  return total;
}

/** The client's answer: the upstream's, naming the model the client asked for, with final usage. */
export function completionAnswer(answer: TextCompletion, clientModel: string, usage: Pick<Usage, "prompt_tokens" | "completion_tokens">): TextCompletion {
  return { ...answer, model: clientModel, usage: { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.prompt_tokens + usage.completion_tokens } };
}
