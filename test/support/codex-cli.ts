// Runs the real Codex CLI (`@openai/codex`, its binary from the npm package) as `codex exec`, offline
// and non-interactive, against a provider at `baseURL` (docs/codex.md#codex-on-your-private-model):
// a temporary CODEX_HOME whose config.toml names the provider (`wire_api = "responses"`, the key in
// an env var), a made-up model, no approvals, no sandbox (workspace-write works here too, with the
// bubblewrap Codex bundles, but what is tested is the wire, not Codex's sandbox), no plugin sync (it
// would reach for GitHub and chatgpt.com), no analytics.
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const CODEX_KEY_ENV = "SLUICE_TEST_KEY";

export interface CodexRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** the files Codex left in its (temporary, empty at start) working folder, by name */
  files: Record<string, string>;
}

export interface CodexOptions {
  baseURL: string;
  prompt: string;
  /** the key Codex sends as `Authorization: Bearer` */
  key?: string;
  model?: string;
  /** Codex's own retries (it retries 5xx, 429 and cut streams 5 times by default); 0 here */
  retries?: number;
  timeoutMs?: number;
}

export function codexConfig(opts: CodexOptions): string {
  const retries = opts.retries ?? 0;
  return `model = ${JSON.stringify(opts.model ?? "made-up-model")}
model_provider = "sluice"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.sluice]
name = "Sluice"
base_url = ${JSON.stringify(opts.baseURL)}
wire_api = "responses"
env_key = "${CODEX_KEY_ENV}"
request_max_retries = ${retries}
stream_max_retries = ${retries}

[features]
plugins = false

[analytics]
enabled = false
`;
}

const codexBin = createRequire(import.meta.url).resolve("@openai/codex/bin/codex.js");

/** `codex exec --skip-git-repo-check PROMPT` in an empty temporary folder; resolves when it exits. */
export async function runCodex(opts: CodexOptions): Promise<CodexRun> {
  const home = await mkdtemp(join(tmpdir(), "sluice-codex-home-"));
  const work = await mkdtemp(join(tmpdir(), "sluice-codex-work-"));
  try {
    await writeFile(join(home, "config.toml"), codexConfig(opts));
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, CODEX_HOME: home, [CODEX_KEY_ENV]: opts.key ?? "sk-probe-key", NO_COLOR: "1" };
    const child = spawn(process.execPath, [codexBin, "exec", "--skip-git-repo-check", opts.prompt], { cwd: work, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 45_000);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (c) => resolve(c));
    }).finally(() => clearTimeout(timer));
    const files: Record<string, string> = {};
    for (const e of await readdir(work, { withFileTypes: true })) if (e.isFile()) files[e.name] = await readFile(join(work, e.name), "utf8");
    return { code, stdout, stderr, files };
  } finally {
    await rm(home, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  }
}
