// What the readers of a kept body (body-json.ts, body-sse.ts) and its redactor (body-redact.ts) share:
// the marks a body is written with, and the finder of its secrets (docs/fastgpt.md#redaction).

export const REDACTED = "[redacted]";
/** what a body that should be JSON and is not becomes: nothing of it is kept */
export const NOT_JSON = "[not kept: not valid JSON]";

/** The secrets of one body's request: the config's, and the caller's keys (its credential headers). */
export interface Finder {
  /** [start, end) of every secret in a decoded value, ascending, not overlapping */
  spans(value: string): Array<[number, number]>;
  /** the value with every secret `[redacted]`; `literal`: base64 not decoded */
  scrub(value: string, literal?: boolean): string;
  /** whether the text may hold a value its bytes do not show as it is (an escape that matters) */
  escapes(text: string): boolean;
}
