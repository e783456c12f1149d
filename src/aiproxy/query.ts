// Reading aiproxy's query parameters as aiproxy does (docs/fastgpt.md#call-logs): an empty value is
// absent (FastGPT sends `channel=` for "All"), a timestamp is read by its digits.
import { invalid } from "./envelope.js";

export type Query = URLSearchParams;

/** The value, or undefined when absent or empty. */
export function param(q: Query, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = q.get(name);
    if (value !== null && value !== "") return value;
  }
  return undefined;
}

/** A whole number ≥ 0, or 400 naming the parameter. */
export function wholeParam(q: Query, name: string): number | undefined {
  const raw = param(q, name);
  if (raw === undefined) return undefined;
  if (!/^\d{1,19}$/.test(raw)) throw invalid(`${name}: expected a whole number`);
  return Number(raw);
}

/** Epoch ms from a timestamp in seconds (≤ 10 digits), ms (≤ 13), µs (≤ 16) or ns. */
export function timestampParam(q: Query, name: string): number | undefined {
  const raw = param(q, name);
  if (raw === undefined) return undefined;
  if (!/^\d{1,19}$/.test(raw)) throw invalid(`${name}: expected a Unix timestamp`);
  const value = Number(raw);
  if (raw.length <= 10) return value * 1000;
  if (raw.length <= 13) return value;
  if (raw.length <= 16) return Math.floor(value / 1000);
  return Math.floor(value / 1_000_000);
}
