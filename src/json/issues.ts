// The one formatter of zod's issues: what is wrong with a JSON value, by the path of the field
// (`messages[2].content`) and a message. Two wordings: a client's (the API's 400s — what was
// expected in a client developer's words, `max_tokens: expected an integer, got 1.5`, which is not
// what zod says), and the schema's own (config.json's problems, for its operator). Values are
// described by their kind, never echoed: a body may carry tokens, a config keys.
import type { z } from "zod";

type Issue = z.core.$ZodIssue;
type Path = ReadonlyArray<PropertyKey>;

/** `client`: the API's words; `schema`: the schema's own messages (zod's, or the schema's custom ones). */
export type IssueWords = "client" | "schema";

export interface DescribedIssue {
  /** the field's full path */
  path: Path;
  /** the path as written: `messages[2].content`; "" for the value itself */
  field: string;
  /** the field and what is wrong with it: `messages[2].content: expected a string, got a number` */
  text: string;
}

/** One issue of `value`. `root` names the value itself when the issue is about it (the text
 *  then starts with it: `Request body: …`). */
export function describeIssue(issue: Issue, value: unknown, opts: { words?: IssueWords; root?: string } = {}): DescribedIssue {
  const { path, message } = opts.words === "schema" ? schemaWords(issue) : clientWords(issue, [], value);
  const field = formatPath(path);
  return { path, field, text: `${field || (opts.root ?? "Request body")}${message}` };
}

/** `messages[2].content`: array indexes in brackets, keys joined by dots. */
export function formatPath(path: Path): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}

/** The schema's own message; an unknown field by its name. */
function schemaWords(issue: Issue): { path: Path; message: string } {
  if (issue.code === "unrecognized_keys") return { path: [...issue.path, issue.keys[0]!], message: ": unknown key" };
  return { path: issue.path, message: `: ${issue.message}` };
}

/** The issue's full path and, in a client's words, the message that follows the field's name
 *  (" is required", ": …"). */
function clientWords(issue: Issue, base: Path, body: unknown): { path: Path; message: string } {
  const path = [...base, ...issue.path];
  const value = valueAt(body, path);
  // (a schema's own check of a field it may leave out says what it needs: "an app key needs appId")
  if (value === undefined && path.length > 0 && issue.code !== "custom") return { path, message: " is required" };
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
  if (furthest && depth(furthest) > 0) return clientWords(furthest[0]!, path, body);
  // the value is of a branch's type, only too long or too short for it (a list past its bound)
  const bounded = branches.find((b) => b[0]?.code === "too_big" || b[0]?.code === "too_small");
  if (bounded) return clientWords(bounded[0]!, path, body);
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
export function kindOf(value: unknown): string {
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
