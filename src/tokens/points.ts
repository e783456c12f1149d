// Points (cost) of one answer, CONTRACTS §5. Prices are per 1,000 tokens.
import type { ModelConfig } from "../config/schema.js";

export function computePoints(model: ModelConfig, inputTokens: number, outputTokens: number): number {
  const points =
    model.inputPrice > 0
      ? (model.inputPrice * inputTokens) / 1000 + (model.outputPrice * outputTokens) / 1000
      : (model.charsPointsPrice * (inputTokens + outputTokens)) / 1000;
  // keep reports readable and sums stable: no binary-fraction tails
  return Math.round(points * 1e6) / 1e6;
}
