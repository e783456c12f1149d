// Runs the real Claude Code CLI (the npm package's native binary) once, non-interactively, against
// a test gateway: `claude -p … --output-format json` with only the environment it needs — a fresh
// HOME, the gateway as ANTHROPIC_BASE_URL, a Sluice key as ANTHROPIC_API_KEY, and no non-essential
// traffic (it then calls nothing but the gateway: checked with strace when this was written).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const CLAUDE_BIN = fileURLToPath(new URL("../../node_modules/@anthropic-ai/claude-code/bin/claude.exe", import.meta.url));

export interface ClaudeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** the parsed `--output-format json` result, when stdout held one */
  result: { result?: string; is_error?: boolean; num_turns?: number; api_error_status?: number | null; terminal_reason?: string; usage?: Record<string, unknown> } | undefined;
}

export interface ClaudeOptions {
  baseUrl: string;
  /** the Sluice key, sent as ANTHROPIC_API_KEY (x-api-key) */
  apiKey: string;
  model?: string;
  /** extra CLI arguments (e.g. ["--allowedTools", "Bash"]) */
  args?: string[];
  env?: Record<string, string>;
  timeoutMs?: number;
  /** a HOME the caller keeps (and removes) across runs, for `--continue`; absent: a fresh one, removed */
  home?: string;
}

export async function runClaude(prompt: string, opts: ClaudeOptions): Promise<ClaudeRun> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), "sluice-claude-home-"));
  try {
    const args = ["-p", prompt, "--output-format", "json", ...(opts.model ? ["--model", opts.model] : []), ...(opts.args ?? [])];
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      ANTHROPIC_BASE_URL: opts.baseUrl,
      ANTHROPIC_API_KEY: opts.apiKey,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      ...opts.env,
    };
    const child = spawn(CLAUDE_BIN, args, { env, cwd: home, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 90_000);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", resolve);
    }).finally(() => clearTimeout(timer));
    let result: ClaudeRun["result"];
    try {
      result = JSON.parse(stdout) as ClaudeRun["result"];
    } catch {
      result = undefined;
    }
    return { code, stdout, stderr, result };
  } finally {
    if (!opts.home) rmSync(home, { recursive: true, force: true });
  }
}
