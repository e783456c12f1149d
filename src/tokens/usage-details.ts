// The details of an upstream's usage object that Sluice keeps: cached prompt tokens (a prefix
// cache's hits, vLLM's and SGLang's `prompt_tokens_details.cached_tokens`) and reasoning tokens.
// Upstream usage is not validated: a detail that is not a count is absent.

/** A count of the upstream's usage details, when it is one. */
export function usageDetail(details: unknown, name: string): number | undefined {
  const n = (details as Record<string, unknown> | null | undefined)?.[name];
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The prompt tokens the upstream served from its prefix cache (docs/routing.md#cached-tokens):
 *  0 when it reports none, never more than `inputTokens`. */
export function cachedTokensOf(usage: unknown, inputTokens: number): number {
  const details = (usage as { prompt_tokens_details?: unknown } | null | undefined)?.prompt_tokens_details;
  return Math.min(usageDetail(details, "cached_tokens") ?? 0, Math.max(0, inputTokens));
}
