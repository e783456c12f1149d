// FastGPT's variables (docs/api.md#variables): `{{key}}` in the model's and the app's system prompts is
// replaced by the variable's value, `{{cTime}}` by the current time; a chat keeps its variables and
// each request's values are merged over them. The prompt is read once, left to right: a value is
// never read again, so `{{a}}` whose value holds `{{b}}` puts `{{b}}` in the prompt as written.
import { badRequest } from "../http/errors.js";

export type Variables = Record<string, unknown>;

// a key holds no brace: every scan stops at the next one, so the whole match is linear in the prompt
const PLACEHOLDER = /\{\{([^{}]+)\}\}/g;

/** The chat's stored variables with the request's over them; refused when storing them would hold
 *  more than `maxBytes` (each request is bounded by the body limit, the sum of requests is not). */
export function mergeVariables(stored: Variables | undefined, sent: Variables | undefined, maxBytes: number): Variables {
  // spread, not assignment: a key named __proto__ stays a key
  const merged = { ...stored, ...sent };
  if (stored && sent && hasAny(stored) && hasAny(sent) && Buffer.byteLength(JSON.stringify(merged)) > maxBytes) {
    throw badRequest("variables_too_large", `The chat's variables with this request's would take more than ${maxBytes} bytes.`, "variables");
  }
  return merged;
}

/** Fills in templates: every `{{key}}` becomes a variable's value (strings as they are, anything
 *  else as JSON); `cTime` is always the current time (a system variable, as in FastGPT's workflows:
 *  a sent or stored `cTime` never freezes the clock); unknown keys stay as written. A 400 once all
 *  the templates filled in by one filler would exceed `maxBytes`, however often a value is named. */
export function createPromptFiller(variables: Variables, opts: { now: Date; maxBytes: number }): (template: string) => string {
  // each key is formatted (and measured) once, however often the prompts name it
  const formatted = new Map<string, { text: string; bytes: number }>();
  let bytes = 0;
  const grow = (by: number) => {
    bytes += by;
    if (bytes > opts.maxBytes) {
      throw badRequest("variables_too_large", `The system prompt with its variables filled in would take more than ${opts.maxBytes} bytes.`, "variables");
    }
  };
  return (template) => {
    grow(Buffer.byteLength(template));
    return template.replace(PLACEHOLDER, (whole: string, key: string) => {
      let value = formatted.get(key);
      if (!value) {
        const text = key === "cTime" ? formatTime(opts.now) : Object.hasOwn(variables, key) ? formatValue(variables[key]) : whole;
        value = { text, bytes: Buffer.byteLength(text) - Buffer.byteLength(whole) };
        formatted.set(key, value);
      }
      grow(value.bytes);
      return value.text;
    });
  };
}

/** True when `variables` has at least one key (without listing them all). */
export function hasAny(variables: Variables): boolean {
  for (const key in variables) if (Object.hasOwn(variables, key)) return true;
  return false;
}

function formatValue(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** FastGPT's `cTime`: `YYYY-MM-DD HH:mm:ss`, the gateway's local time. */
export function formatTime(date: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return (
    `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ` +
    `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`
  );
}
