// Points (cost) of one answer (docs/api.md#tokens-and-points). Prices are per 1,000 tokens.
import type { ModelConfig } from "../config/schema.js";

/** A chat model's prices, or an embedding model's (no output price: embeddings have no output). */
export type Prices = Pick<ModelConfig, "inputPrice" | "charsPointsPrice"> & { outputPrice?: number; cachedInputPrice?: number };

/** `cachedTokens` (of `inputTokens`, served from the upstream's prefix cache) are priced by
 *  `cachedInputPrice`, which defaults to the input price (docs/routing.md#cached-tokens). */
export function computePoints(model: Prices, inputTokens: number, outputTokens: number, cachedTokens = 0): number {
  const cached = Math.min(Math.max(0, cachedTokens), inputTokens);
  const points =
    model.inputPrice > 0
      ? (model.inputPrice * (inputTokens - cached) + (model.cachedInputPrice ?? model.inputPrice) * cached) / 1000 + ((model.outputPrice ?? 0) * outputTokens) / 1000
      : (model.charsPointsPrice * (inputTokens + outputTokens)) / 1000;
  return roundPoints(points);
}

/** Points as kept and reported: to the millionth, so reports stay readable and sums stable (no
 *  binary-fraction tails). */
export const roundPoints = (points: number): number => Math.round(points * 1e6) / 1e6;
