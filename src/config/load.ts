// Loads config.json: `${ENV}` substitution in every string, then the one schema. Every problem is
// reported by its path so an operator can fix the file in one pass; an unknown key is reported with
// the nearest name its object knows.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { z } from "zod";
import { describeIssue, formatPath } from "../json/issues.js";
import { jsonErrorPlace } from "./json-position.js";
import { configSchema, type Config } from "./schema.js";

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(source: string, problems: string[]) {
    super(`invalid config ${source}:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Replaces `${NAME}` in every string of a JSON value; a missing variable is a problem at its path. */
function substituteEnv(value: unknown, env: NodeJS.ProcessEnv, path: string, problems: string[]): unknown {
  if (typeof value === "string") {
    return value.replace(ENV_REF, (_, name: string) => {
      const v = env[name];
      if (v === undefined) {
        problems.push(`${path || "(root)"}: environment variable ${name} is not set`);
        return "";
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, `${path}[${i}]`, problems));
  if (value && typeof value === "object") {
    // fromEntries defines own keys, so a `__proto__` key stays a key (and is refused) instead of a prototype.
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, substituteEnv(v, env, path ? `${path}.${k}` : k, problems)]),
    );
  }
  return value;
}

/** One problem per issue, except one per key for unknown keys. */
/** An issue's problems in the schema's words (json/issues.ts); every unknown key, with the nearest
 *  name its object knows. */
function problemsOf(issue: z.core.$ZodIssue, input: unknown): string[] {
  if (issue.code !== "unrecognized_keys") return [describeIssue(issue, input, { words: "schema", root: "(root)" }).text];
  const known = knownKeysAt(configSchema, issue.path, input);
  return issue.keys.map((key) => {
    const near = nearest(key, known);
    return `${formatPath([...issue.path, key])}: unknown key${near ? ` — did you mean "${near}"?` : ""}`;
  });
}

/** The keys the object schema at `path` accepts; `value` (the input there) picks a union's branch. */
function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[], value: unknown): string[] {
  const s = unwrap(schema, value);
  const [head, ...rest] = path;
  if (head === undefined) return s instanceof z.ZodObject ? Object.keys(s.shape) : [];
  const child = value !== null && typeof value === "object" ? (value as Record<PropertyKey, unknown>)[head] : undefined;
  if (s instanceof z.ZodArray) return knownKeysAt(s.element as z.ZodType, rest, child);
  const field = s instanceof z.ZodObject && typeof head === "string" ? (s.shape as Record<string, z.ZodType>)[head] : undefined;
  return field ? knownKeysAt(field, rest, child) : [];
}

function unwrap(schema: z.ZodType, value: unknown): z.ZodType {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault || schema instanceof z.ZodOptional || schema instanceof z.ZodNullable)
    return unwrap(schema.unwrap() as z.ZodType, value);
  if (schema instanceof z.ZodDiscriminatedUnion) {
    const tag = (value as Record<string, unknown> | undefined)?.[schema.def.discriminator];
    const branch = (schema.options as z.ZodType[]).find(
      (o) => o instanceof z.ZodObject && (o.shape as Record<string, z.ZodType>)[schema.def.discriminator]?.safeParse(tag).success,
    );
    return branch ?? schema;
  }
  return schema;
}

/** The known name closest to `key`, if close enough to be the intended one. */
function nearest(key: string, known: string[]): string | undefined {
  const limit = Math.min(Math.max(2, Math.floor(key.length / 3)), key.length - 1);
  let best: { name: string; d: number } | undefined;
  for (const name of known) {
    const d = editDistance(key.toLowerCase(), name.toLowerCase());
    if (d <= limit && (!best || d < best.d)) best = { name, d };
  }
  return best?.name;
}

/** Levenshtein distance. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const replace = prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, replace));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** Validates a raw config object (already JSON-parsed). Throws ConfigError listing every problem. */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env, source = "object"): Config {
  const problems: string[] = [];
  const substituted = substituteEnv(raw, env, "", problems);
  const result = configSchema.safeParse(substituted);
  if (!result.success) {
    for (const issue of result.error.issues) problems.push(...problemsOf(issue, substituted));
  }
  if (problems.length > 0 || !result.success) throw new ConfigError(source, problems);
  return result.data;
}

export function loadConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): Config {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(path, [`cannot read the file: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error, which may be a key: the place only
    const place = jsonErrorPlace(text);
    const where = place ? ` at line ${place.line}, column ${place.column}` : "";
    throw new ConfigError(path, [`${basename(path)}: invalid JSON${where}`]);
  }
  return parseConfig(raw, env, path);
}
