// The `sluice` command line (docs/operations.md#the-sluice-command) as an operator runs it: `node
// bin/sluice.js …` (the package's bin) and `npm run sluice -- …`, against a gateway on a real socket.
// --help on every command, keys create|list|revoke over the API, check-config on a good and a bad file.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APP_KEY, chatOk, expectError, gatewayConfig, postChat, useTempDir, user } from "./support/fixtures.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { REPO_ROOT, freePort } from "./support/main-process.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const ADMIN_KEY = "sk-test-cli-admin-0001";
const BIN = join(REPO_ROOT, "bin/sluice.js");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command args` in the repository with SLUICE_URL and SLUICE_ADMIN_KEY set (unless `env` says otherwise). */
function run(command: string, args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: REPO_ROOT,
      env: definedOnly({ ...process.env, SLUICE_URL: gw.url, SLUICE_ADMIN_KEY: ADMIN_KEY, SLUICE_CONFIG: undefined, ...env }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}
const definedOnly = (env: Record<string, string | undefined>) => Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined));
const sluice = (args: string[], env?: Record<string, string | undefined>) => run(process.execPath, [BIN, ...args], env);

let upstream: Upstream;
let gw: StartedGateway;
const tmp = useTempDir("sluice-cli-");

function rawConfig(): Record<string, unknown> {
  const raw = gatewayConfig(upstream.url) as { apiKeys: unknown[]; channels: Array<Record<string, unknown>> };
  raw.apiKeys.push({ name: "root", kind: "admin", key: ADMIN_KEY });
  for (const channel of raw.channels) channel.healthCheck = { intervalMs: 0 };
  return raw;
}

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startGateway(rawConfig());
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});

describe("sluice --help", () => {
  it("prints the usage of every command and sub-command and exits 0", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--help"], /^Usage: sluice <command>/],
      [["check-config", "--help"], /^Usage: sluice check-config \[PATH\]/],
      [["keys", "--help"], /^Usage: sluice keys <create\|list\|revoke>/],
      [["keys", "create", "--help"], /^Usage: sluice keys create NAME/],
      [["keys", "list", "--help"], /^Usage: sluice keys list/],
      [["keys", "revoke", "--help"], /^Usage: sluice keys revoke NAME/],
    ];
    for (const [args, usage] of cases) {
      const { code, stdout } = await sluice(args);
      expect(code, args.join(" ")).toBe(0);
      expect(stdout).toMatch(usage);
    }
  });

  it("exits 2 with the usage on stderr for a missing or unknown command and an unknown option", async () => {
    for (const args of [[], ["frobnicate"], ["keys"], ["keys", "list", "--bogus"], ["keys", "create", "web"]]) {
      const { code, stderr } = await sluice(args);
      expect(code, args.join(" ")).toBe(2);
      expect(stderr).toContain("Usage: sluice");
    }
  });
});

describe("sluice keys", () => {
  it("creates a key (only the key on stdout), lists it without the key, revokes it: the gateway then answers 401", async () => {
    const created = await sluice(["keys", "create", "cli-web", "--app", "a1", "--qpm", "30", "--max-usage-points", "100"]);
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^sk-sluice-[A-Za-z0-9_-]{32,}$/);
    expect(created.stderr).toContain("shown this once only");
    await chatOk(gw.url, { messages: [user("from the cli key")] }, key);

    const listed = await sluice(["keys", "list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^NAME\s+KIND\s+APP\s+SOURCE\s+CREATED\s+REVOKED\s+LAST USED/);
    expect(listed.stdout).toMatch(/^cli-web\s+app\s+a1\s+api\s+\d{4}-/m);
    expect(listed.stdout).toMatch(/^k1\s+app\s+a1\s+config\s+-/m);
    for (const secret of [key, APP_KEY, ADMIN_KEY]) expect(listed.stdout + listed.stderr).not.toContain(secret);

    const revoked = await sluice(["keys", "revoke", "cli-web"]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain('Revoked key "cli-web"');
    await expectError(await postChat(gw.url, { messages: [user("revoked")] }, key), 401, "invalid_api_key");
  });

  it("prints JSON with --json, and creates a global key with --kind global", async () => {
    const created = await sluice(["keys", "create", "cli-global", "--kind", "global", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ name: "cli-global", kind: "global", appId: null, key: expect.stringMatching(/^sk-sluice-/) });
    const listed = await sluice(["keys", "list", "--json"]);
    const { keys } = JSON.parse(listed.stdout) as { keys: Array<{ name: string; source: string }> };
    expect(keys.find((k) => k.name === "cli-global")?.source).toBe("api");
  });

  it("creates a key with --tpm, --period-points and --expires, then prints the usage report by key (table and CSV)", async () => {
    const created = await sluice(["keys", "create", "cli-team", "--app", "a1", "--tpm", "5000", "--period-points", "10", "--period", "week", "--expires", "2099-01-31T00:00:00Z", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const made = JSON.parse(created.stdout) as { key: string; expiresAt: string };
    expect(made.expiresAt).toBe("2099-01-31T00:00:00.000Z");
    const listed = await sluice(["keys", "list"]);
    expect(listed.stdout).toMatch(/^cli-team\s+app\s+a1\s+api\s+\S+\s+-\s+-\s+2099-01-31T00:00:00\.000Z$/m);
    await chatOk(gw.url, { messages: [user("from the team key")] }, made.key);
    const bad = await sluice(["keys", "create", "cli-late", "--app", "a1", "--expires", "someday"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("expiresAt");

    const table = await sluice(["usage", "--by", "key,day", "--from", "2000-01-01T00:00:00Z"]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^KEY\s+DAY\s+REQUESTS\s+INPUT\s+OUTPUT\s+CACHED\s+POINTS/);
    expect(table.stdout).toMatch(/^cli-team\s+\d{4}-\d\d-\d\d\s+1\s/m);
    const csv = await sluice(["usage", "--by", "key", "--csv"]);
    expect(csv.code, csv.stderr).toBe(0);
    expect(csv.stdout.split("\r\n")[0]).toBe("key,requests,inputTokens,outputTokens,cachedTokens,points");
    expect(csv.stdout).toMatch(/\r\ncli-team,1,\d+,\d+,0,/);
  });

  it("works as `npm run sluice -- keys list`", { timeout: 30_000 }, async () => {
    const { code, stdout, stderr } = await run("npm", ["run", "--silent", "sluice", "--", "keys", "list"]);
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^root\s+admin\s+-\s+config/m);
  });

  it("exits 1 with the gateway's message for an error answer, and never prints the admin key", async () => {
    const taken = await sluice(["keys", "create", "k1", "--app", "a1"]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/409 key_name_taken/);
    const unknown = await sluice(["keys", "revoke", "nobody"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404 key_not_found/);
    const inConfig = await sluice(["keys", "revoke", "k1"]);
    expect(inConfig.stderr).toMatch(/409 key_in_config/);
    const badApp = await sluice(["keys", "create", "x1", "--app", "nope"]);
    expect(badApp.stderr).toMatch(/appId: unknown app "nope" \(400 invalid_request\)/);
    const notAdmin = await sluice(["keys", "list"], { SLUICE_ADMIN_KEY: APP_KEY });
    expect(notAdmin.code).toBe(1);
    expect(notAdmin.stderr).toMatch(/403 admin_key_required/);
    for (const r of [taken, unknown, inConfig, badApp, notAdmin]) expect(r.stdout + r.stderr).not.toContain(ADMIN_KEY);
    expect(notAdmin.stderr).not.toContain(APP_KEY);
  });

  it("says what is missing without SLUICE_ADMIN_KEY (exit 2) or without a gateway at SLUICE_URL (exit 1)", async () => {
    const noKey = await sluice(["keys", "list"], { SLUICE_ADMIN_KEY: undefined });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("SLUICE_ADMIN_KEY");
    const noGateway = await sluice(["keys", "list"], { SLUICE_URL: `http://127.0.0.1:${await freePort()}` });
    expect(noGateway.code).toBe(1);
    expect(noGateway.stderr).toMatch(/cannot reach the gateway at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });
});

describe("sluice check-config", () => {
  it("exits 0 for a valid file", async () => {
    const path = tmp.file("good.json");
    writeFileSync(path, JSON.stringify(rawConfig()));
    const { code, stdout, stderr } = await sluice(["check-config", path]);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain(`${path}: valid`);
  });

  it("exits 1 listing every problem by its path, unknown keys with the nearest name", async () => {
    const raw = rawConfig() as { llmModels: Array<Record<string, unknown>>; apiKeys?: unknown };
    raw.llmModels[0]!.maxContext = "big";
    const typo = { ...raw, apikeys: raw.apiKeys, apiKeys: undefined, channels: [{ name: "c", baseUrl: "http://x", models: ["m1"], key: "${SLUICE_CLI_TEST_UNSET}" }] };
    const path = tmp.file("bad.json");
    writeFileSync(path, JSON.stringify(typo));
    const { code, stdout, stderr } = await sluice(["check-config", path]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain("llmModels[0].maxContext");
    expect(stderr).toContain('apikeys: unknown key — did you mean "apiKeys"?');
    expect(stderr).toContain("environment variable SLUICE_CLI_TEST_UNSET is not set");
  });

  it("reads SLUICE_CONFIG when no PATH is given, and exits 1 for a file that is not there", async () => {
    const path = tmp.file("from-env.json");
    writeFileSync(path, JSON.stringify(rawConfig()));
    expect((await sluice(["check-config"], { SLUICE_CONFIG: path })).code).toBe(0);
    const missing = await sluice(["check-config", tmp.file("missing.json")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("cannot read the file: ENOENT");
  });
});
