// Request bodies checked by zod schemas: the first failure becomes a 400 `invalid_request` whose
// `param` names the field (`messages[2].content`) and whose message says what was expected, in a
// client developer's words (json/issues.ts, the one formatter of zod's issues).
// A body is checked only up to its first failure, and a list's length before its items
// (docs/api.md#request-bounds): a body of 100,000 wrong items costs no more than one.
import { z } from "zod";
import { describeIssue, kindOf } from "../json/issues.js";
import { badRequest, type GatewayError } from "./errors.js";

/** The body checked by `schema`, or a 400 naming the first wrong field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw badRequest("invalid_request", `Request body must be a JSON object, got ${kindOf(body)}.`);
  }
  const result = schema.safeParse(body, FIRST_ISSUE);
  if (result.success) return result.data;
  throw invalidBody(result.error.issues[0]!, body);
}

// zod's own early stop (what its `validate` runs with): every list and object stops at its first
// failing item or field, so no more than one issue is ever built. `async: false` is named here
// because safeParse spreads the context into `{ ...ctx, async: false }`: an object without that key
// takes V8's slow copy, 0.5 µs per parse, and the parse's own lookups on it another 2 µs
// (docs/performance.md#the-non-stream-path)
const FIRST_ISSUE = { async: false, abortEarly: true } as z.core.ParseContext<z.core.$ZodIssue>;

/** The longest model name a request may send (and `/v1/models/{id}` may ask for). */
export const MAX_MODEL_NAME = 256;
/** A model name, as every request body names it. */
export const modelName = () => z.string().min(1).max(MAX_MODEL_NAME);

/** Stop strings (`stop`, `stop_sequences`): each at most this many characters. */
export const MAX_STOP_LENGTH = 1024;
/** A model's stop strings: a string, or at most `max` of them. */
export const stopStrings = (max: number) => z.union([z.string().max(MAX_STOP_LENGTH), listOf(z.string().max(MAX_STOP_LENGTH), max)]);

/** A list of `min` to `max` items: its length is checked before any item is (a list past its
 *  bound is refused without looking at one of them). */
export function listOf<T extends z.ZodType>(item: T, max: number, min = 0) {
  return z.preprocess((value, ctx) => {
    if (Array.isArray(value) && value.length > max) ctx.addIssue({ code: "too_big", origin: "array", maximum: max, inclusive: true, input: value, message: "too many items" });
    return value;
  }, z.array(item).min(min));
}

/** The 400 for one zod issue of `body`: `param` the field, the message in a client's words. */
export function invalidBody(issue: z.core.$ZodIssue, body: unknown): GatewayError {
  const { field, text } = describeIssue(issue, body);
  return badRequest("invalid_request", text, field || null);
}
