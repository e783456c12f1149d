// Loads config.json: `${ENV}` substitution in every string, then the one schema. Every problem is
// reported by its path so an operator can fix the file in one pass.
import { readFileSync } from "node:fs";
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
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, env, path ? `${path}.${k}` : k, problems);
    return out;
  }
  return value;
}

function formatPath(path: PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || "(root)";
}

/** Validates a raw config object (already JSON-parsed). Throws ConfigError listing every problem. */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env, source = "object"): Config {
  const problems: string[] = [];
  const substituted = substituteEnv(raw, env, "", problems);
  const result = configSchema.safeParse(substituted);
  if (!result.success) {
    for (const issue of result.error.issues) problems.push(`${formatPath(issue.path)}: ${issue.message}`);
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
  } catch (err) {
    throw new ConfigError(path, [`not valid JSON: ${(err as Error).message}`]);
  }
  return parseConfig(raw, env, path);
}
