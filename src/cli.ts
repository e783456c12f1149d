// The `sluice` command line (docs/operations.md#the-sluice-command): `check-config [PATH]` checks a config file offline with
// the loader the gateway starts with; `keys create|list|revoke` call the keys API of a running
// gateway (SLUICE_URL, SLUICE_ADMIN_KEY), and `usage` its usage report. `--help` on every command. Exit status: 0 done, 1 failed
// (an invalid config, an error answer, no gateway), 2 the command line itself is wrong.
import { resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { ConfigError, loadConfigFile } from "./config/load.js";

const DEFAULT_URL = "http://127.0.0.1:3000";
const REQUEST_TIMEOUT_MS = 30_000;

const HELP = {
  main: `Usage: sluice <command> [options]

Commands:
  check-config [PATH]   check a config file offline, as the gateway does at start-up
  keys create NAME      create an API key (shown once)
  keys list             list every key: from config.json and created through the API
  keys revoke NAME      revoke a key created through the API
  usage                 the usage report, grouped (--by key,day)

Run \`sluice <command> --help\` for a command's options. The keys commands call a running gateway:
  SLUICE_URL         the gateway's address (default ${DEFAULT_URL})
  SLUICE_ADMIN_KEY   an admin key (kind "admin" in config.json)`,
  checkConfig: `Usage: sluice check-config [PATH]

Checks PATH (default: env SLUICE_CONFIG, else ./config.json) with the gateway's own loader: JSON,
\${ENV} references (resolved from this shell's environment), every field, unknown keys and
cross-references. Prints every problem by its path and exits 1, or exits 0 when the file is valid.`,
  keys: `Usage: sluice keys <create|list|revoke> [options]

  keys create NAME (--app ID | --kind global) [--max-usage-points N] [--qpm N] [--tpm N]
              [--period-points N] [--period day|week|month] [--expires TIME] [--json]
  keys list [--json]
  keys revoke NAME

Calls the gateway at SLUICE_URL (default ${DEFAULT_URL}) with SLUICE_ADMIN_KEY.`,
  create: `Usage: sluice keys create NAME (--app ID | --kind global) [options]

Creates a key and prints it on stdout: it is shown this once only (the gateway keeps its sha256).
  --app ID                an app key for application ID (kind "app")
  --kind app|global       the key's kind; a global key may list models and read usage, not chat
  --max-usage-points N    the key's points budget (default -1: none)
  --qpm N                 requests per minute (default 0: no limit)
  --tpm N                 tokens per minute (default 0: no limit)
  --period-points N       points per period (default -1: none)
  --period day|week|month the period of --period-points, in server.timezone (default day)
  --expires TIME          refused after this ISO 8601 time, e.g. 2027-01-31T00:00:00Z
  --json                  print the API's answer as JSON instead`,
  usage: `Usage: sluice usage [--by COLUMNS] [--from TIME] [--to TIME] [--tz ZONE] [--app ID] [--csv | --json]

Prints the usage report of the gateway at SLUICE_URL (with SLUICE_ADMIN_KEY): requests, input,
output and cached tokens and points per group.
  --by COLUMNS   comma-separated: app, model, kind, finishReason, key, share, user, day, hour
  --from TIME    ISO 8601 (or epoch ms), inclusive; --to TIME exclusive
  --tz ZONE      the IANA time zone of day and hour (default: the gateway's server.timezone)
  --app ID       one app's rows only
  --csv          print CSV; --json the API's answer as JSON`,
  list: `Usage: sluice keys list [--json]

Lists every key: name, kind, app, source (config or api), created, revoked, last used, expires.
Never a key.
  --json   print the API's answer as JSON instead`,
  revoke: `Usage: sluice keys revoke NAME

Revokes a key created through the API: the gateway refuses it from then on. Keys from config.json
are removed in the file (then reload).`,
};

class UsageError extends Error {}
class Failure extends Error {}

type Options = NonNullable<ParseArgsConfig["options"]>;
interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** The parsed arguments, or undefined when `--help` was asked (the help is then printed). */
function parse(args: string[], options: Options, help: string): Parsed | undefined {
  let parsed: Parsed;
  try {
    parsed = parseArgs({ args, options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${help}`);
  }
  if (parsed.values.help) {
    console.log(help);
    return undefined;
  }
  return parsed;
}

function checkConfig(args: string[]): void {
  const parsed = parse(args, {}, HELP.checkConfig);
  if (!parsed) return;
  if (parsed.positionals.length > 1) throw new UsageError(`check-config takes one PATH\n\n${HELP.checkConfig}`);
  const path = resolve(parsed.positionals[0] ?? process.env.SLUICE_CONFIG ?? "./config.json");
  try {
    const c = loadConfigFile(path);
    console.log(`${path}: valid (${c.channels.length} channels, ${c.llmModels.length} models, ${c.apps.length} apps, ${c.apiKeys.length} keys)`);
  } catch (err) {
    if (err instanceof ConfigError) throw new Failure(err.message);
    throw err;
  }
}

async function keys(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === "create") return createKey(rest);
  if (sub === "list") return listKeys(rest);
  if (sub === "revoke") return revokeKey(rest);
  if (sub === "--help" || sub === "-h") return console.log(HELP.keys);
  throw new UsageError(`${sub === undefined ? "keys needs a sub-command" : `unknown keys sub-command ${JSON.stringify(sub)}`}\n\n${HELP.keys}`);
}

async function createKey(args: string[]): Promise<void> {
  const options: Options = {
    ...{ app: { type: "string" }, kind: { type: "string" }, "max-usage-points": { type: "string" }, qpm: { type: "string" }, json: { type: "boolean" } },
    ...{ tpm: { type: "string" }, "period-points": { type: "string" }, period: { type: "string" }, expires: { type: "string" } },
  };
  const parsed = parse(args, options, HELP.create);
  if (!parsed) return;
  const { values: v, positionals } = parsed;
  const name = onlyName(positionals, HELP.create);
  const kind = (v.kind as string | undefined) ?? (v.app !== undefined ? "app" : undefined);
  if (kind === undefined) throw new UsageError(`give --app ID for an app key, or --kind global\n\n${HELP.create}`);
  const body = {
    name,
    kind,
    ...(v.app !== undefined && { appId: v.app }),
    ...(v["max-usage-points"] !== undefined && { maxUsagePoints: numberOption("--max-usage-points", v["max-usage-points"] as string) }),
    ...(v.qpm !== undefined && { qpm: numberOption("--qpm", v.qpm as string) }),
    ...(v.tpm !== undefined && { tpm: numberOption("--tpm", v.tpm as string) }),
    ...(v["period-points"] !== undefined && { periodPoints: numberOption("--period-points", v["period-points"] as string) }),
    ...(v.period !== undefined && { period: v.period }),
    ...(v.expires !== undefined && { expiresAt: v.expires }),
  };
  const created = (await callApi("POST", "/api/admin/keys", body)) as { name: string; kind: string; appId: string | null; key: string };
  if (v.json) return console.log(JSON.stringify(created, null, 2));
  console.error(`Created ${created.kind} key ${JSON.stringify(created.name)}${created.appId ? ` for app ${created.appId}` : ""}. The key, shown this once only:`);
  console.log(created.key);
}

interface ListedKey {
  name: string;
  kind: string;
  appId: string | null;
  source: string;
  createdAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  expiresAt?: string | null;
}

async function listKeys(args: string[]): Promise<void> {
  const parsed = parse(args, { json: { type: "boolean" } }, HELP.list);
  if (!parsed) return;
  if (parsed.positionals.length > 0) throw new UsageError(`keys list takes no NAME\n\n${HELP.list}`);
  const answer = (await callApi("GET", "/api/admin/keys")) as { keys: ListedKey[] };
  if (parsed.values.json) return console.log(JSON.stringify(answer, null, 2));
  const rows = answer.keys.map((k) => [k.name, k.kind, k.appId ?? "-", k.source, k.createdAt ?? "-", k.revokedAt ?? "-", k.lastUsedAt ?? "-", k.expiresAt ?? "-"]);
  console.log(table(["NAME", "KIND", "APP", "SOURCE", "CREATED", "REVOKED", "LAST USED", "EXPIRES"], rows));
}

async function revokeKey(args: string[]): Promise<void> {
  const parsed = parse(args, {}, HELP.revoke);
  if (!parsed) return;
  const name = onlyName(parsed.positionals, HELP.revoke);
  const answer = (await callApi("DELETE", `/api/admin/keys/${encodeURIComponent(name)}`)) as { revokedAt: string };
  console.log(`Revoked key ${JSON.stringify(name)} (at ${answer.revokedAt}).`);
}

const TOTALS = ["requests", "inputTokens", "outputTokens", "cachedTokens", "points"] as const;

async function usage(args: string[]): Promise<void> {
  const text = { type: "string" } as const;
  const parsed = parse(args, { by: text, from: text, to: text, tz: text, app: text, csv: { type: "boolean" }, json: { type: "boolean" } }, HELP.usage);
  if (!parsed) return;
  const v = parsed.values as Record<string, string | undefined> & { csv?: boolean; json?: boolean };
  if (parsed.positionals.length > 0) throw new UsageError(`usage takes options only\n\n${HELP.usage}`);
  const query = new URLSearchParams();
  for (const [option, param] of [["by", "groupBy"], ["from", "from"], ["to", "to"], ["tz", "tz"], ["app", "appId"]] as const) {
    if (v[option] !== undefined) query.set(param, v[option]);
  }
  if (v.csv) query.set("format", "csv");
  const answer = await callApi("GET", `/api/v1/usage?${query}`, undefined, v.csv === true);
  if (v.csv) return void process.stdout.write(answer as string);
  if (v.json) return console.log(JSON.stringify(answer, null, 2));
  const by = v.by ? v.by.split(",").map((b) => b.trim()) : [];
  const report = answer as { totals: Record<string, number>; groups?: Array<Record<string, string | number | null>> };
  const groups = report.groups ?? [report.totals];
  const rows = groups.map((g) => [...by.map((b) => String(g[b] ?? "-")), ...TOTALS.map((t) => String(g[t] ?? 0))]);
  console.log(table([...by.map((b) => b.toUpperCase()), "REQUESTS", "INPUT", "OUTPUT", "CACHED", "POINTS"], rows));
}

function onlyName(positionals: string[], help: string): string {
  if (positionals.length !== 1) throw new UsageError(`give exactly one NAME\n\n${help}`);
  return positionals[0]!;
}

function numberOption(flag: string, text: string): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n)) throw new UsageError(`${flag} expects a number, got ${JSON.stringify(text)}`);
  return n;
}

/** The JSON answer of the keys API; a Failure saying what went wrong otherwise. Never prints the admin key. */
async function callApi(method: string, path: string, body?: unknown, raw = false): Promise<unknown> {
  const base = (process.env.SLUICE_URL || DEFAULT_URL).replace(/\/+$/, "");
  const adminKey = process.env.SLUICE_ADMIN_KEY;
  if (!adminKey) throw new UsageError("set SLUICE_ADMIN_KEY to an admin key (kind \"admin\" in config.json)");
  let url: URL;
  try {
    url = new URL(base + path);
  } catch {
    throw new UsageError(`SLUICE_URL is not a URL: ${JSON.stringify(base)}`);
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, ...(body !== undefined && { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new Failure(`cannot reach the gateway at ${base} (${why}): is it running, and is SLUICE_URL right?`);
  }
  const text = await res.text();
  if (raw && res.ok) return text;
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new Failure(`the gateway at ${base} answered ${res.status} with a body that is not JSON`);
  }
  if (!res.ok) {
    const error = (answer as { error?: { message?: string; code?: string } }).error;
    throw new Failure(`${error?.message ?? "request failed"} (${res.status}${error?.code ? ` ${error.code}` : ""})`);
  }
  return answer;
}

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows].map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === "check-config") return checkConfig(rest);
  if (command === "keys") return keys(rest);
  if (command === "usage") return usage(rest);
  if (command === "--help" || command === "-h" || command === "help") return console.log(HELP.main);
  throw new UsageError(`${command === undefined ? "a command is needed" : `unknown command ${JSON.stringify(command)}`}\n\n${HELP.main}`);
}

main(process.argv.slice(2)).then(
  () => (process.exitCode ??= 0),
  (err: unknown) => {
    if (err instanceof UsageError || err instanceof Failure) {
      console.error(`sluice: ${err.message}`);
      process.exitCode = err instanceof UsageError ? 2 : 1;
    } else {
      console.error("sluice: unexpected error:", err instanceof Error ? err.message : err);
      process.exitCode = 1;
    }
  },
);
