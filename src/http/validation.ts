// Request bodies checked by zod schemas: the first failure becomes a 400 `invalid_request` whose
// `param` names the field (`messages[2].content`) and whose message says what was expected, in a
// client developer's words (`max_tokens: expected an integer, got 1.5` is not what zod says).
// Values are described by their kind, never echoed: a body may carry tokens.
// A body is checked only up to its first failure, and a list's length before its items
// (docs/api.md#request-bounds): a body of 100,000 wrong items costs no more than one.
import { z } from "zod";
import { badRequest, type GatewayError } from "./errors.js";

type Issue = z.core.$ZodIssue;
type Path = ReadonlyArray<PropertyKey>;

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

/** The 400 for one zod issue of `body`. */
export function invalidBody(issue: Issue, body: unknown): GatewayError {
  const { path, message } = describeIssue(issue, [], body);
  const param = formatPath(path);
  return badRequest("invalid_request", param ? `${param}${message}` : `Request body${message}`, param || null);
}

/** `messages[2].content`: array indexes in brackets, keys joined by dots. */
export function formatPath(path: Path): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}

/** The issue's full path and the message that follows the field's name (" is required", ": …"). */
function describeIssue(issue: Issue, base: Path, body: unknown): { path: Path; message: string } {
  const path = [...base, ...issue.path];
  const value = valueAt(body, path);
  if (value === undefined && path.length > 0) return { path, message: " is required" };
  switch (issue.code) {
    case "invalid_type":
      // a number that is not whole is shown: it holds no secret, and says what was wrong with it
      const got = issue.expected === "int" && Number.isFinite(value) ? String(value) : kindOf(value);
      return { path, message: `: expected ${typeWords(issue.expected)}, got ${got}` };
    case "invalid_value":
      return { path, message: `: must be ${oneOf(issue.values.map((v) => JSON.stringify(v)))}` };
    case "invalid_union":
      return describeUnion(issue, path, body);
    case "too_small":
    case "too_big":
      return { path, message: `: ${describeBound(issue)}` };
    case "unrecognized_keys":
      return { path: [...path, issue.keys[0]!], message: ": unknown field" };
    default:
      return { path, message: `: ${issue.message}` };
  }
}

/** A union that failed every branch: follow the branch that got furthest into the value; when
 *  none got past its first step, say every type the branches expected. */
function describeUnion(issue: Extract<Issue, { code: "invalid_union" }>, path: Path, body: unknown): { path: Path; message: string } {
  // a discriminated union whose tag matched no branch
  if (issue.errors.length === 0 && "options" in issue && Array.isArray(issue.options)) {
    const values = (issue.options as unknown[]).map((o) => JSON.stringify(o));
    return { path, message: `: must be ${oneOf(values)}` };
  }
  const branches = issue.errors.filter((b) => b.length > 0);
  // (a loop, not Math.max(...spread): a branch's issues are not bounded by the call stack's size)
  const depth = (branch: Issue[]) => branch.reduce((most, i) => Math.max(most, i.path.length + (i.code === "invalid_union" ? 1 : 0)), 0);
  const furthest = branches.reduce<Issue[] | undefined>((best, b) => (!best || depth(b) > depth(best) ? b : best), undefined);
  if (furthest && depth(furthest) > 0) return describeIssue(furthest[0]!, path, body);
  // the value is of a branch's type, only too long or too short for it (a list past its bound)
  const bounded = branches.find((b) => b[0]?.code === "too_big" || b[0]?.code === "too_small");
  if (bounded) return describeIssue(bounded[0]!, path, body);
  const expected = branches.flatMap((b) => (b[0]?.code === "invalid_type" ? [typeWords(b[0].expected)] : []));
  if (expected.length === 0) return { path, message: `: ${issue.message}` };
  return { path, message: `: expected ${anyOf([...new Set(expected)])}, got ${kindOf(valueAt(body, path))}` };
}

function describeBound(issue: Extract<Issue, { code: "too_small" | "too_big" }>): string {
  const limit = Number(issue.code === "too_small" ? issue.minimum : issue.maximum);
  const small = issue.code === "too_small";
  switch (issue.origin) {
    case "string":
      if (small && limit === 1) return "must not be empty";
      return `must be at ${small ? "least" : "most"} ${limit} characters`;
    case "array":
    case "set":
      if (small && limit === 1) return "must hold at least one item";
      return `must hold at ${small ? "least" : "most"} ${limit} items`;
    default:
      if (issue.inclusive === false) return `must be ${small ? "greater" : "less"} than ${limit}`;
      return `must be at ${small ? "least" : "most"} ${limit}`;
  }
}

const TYPE_WORDS: Record<string, string> = {
  int: "an integer",
  number: "a number",
  string: "a string",
  boolean: "true or false",
  array: "an array",
  object: "an object",
  record: "an object",
  null: "null",
};
const typeWords = (type: string) => TYPE_WORDS[type] ?? type;

/** What a JSON value is, in words, without its content. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isFinite(value) ? "a number" : "a number out of range";
  if (typeof value === "string") return value.length === 0 ? "an empty string" : "a string";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "object") return "an object";
  return "nothing";
}

/** `"a"`, `"a" or "b"`, `one of "a", "b", "c"` */
function oneOf(values: string[]): string {
  return values.length > 2 ? `one of ${values.join(", ")}` : anyOf(values);
}

/** `a string`, `a string or null`, `a string, an array or null` */
function anyOf(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
}

function valueAt(body: unknown, path: Path): unknown {
  let value = body;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = Object.hasOwn(value, key) ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  }
  return value;
}
