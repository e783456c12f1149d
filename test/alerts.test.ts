// The Prometheus alert rules (grafana/alerts.yml) under promtool: they parse, and the unit tests in
// grafana/alerts.test.yml make every alert fire and keep it quiet where it should. That the rule
// expressions evaluate on a real Prometheus scraping a real gateway is test/dashboard.test.ts's.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const PROMTOOL = "/usr/bin/promtool";
const RULES = fileURLToPath(new URL("../grafana/alerts.yml", import.meta.url));
const RULE_TESTS = fileURLToPath(new URL("../grafana/alerts.test.yml", import.meta.url));

interface Run {
  code: number;
  output: string;
}

function promtool(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(PROMTOOL, args, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : NaN) : 0;
      if (Number.isNaN(code)) reject(err); // could not run at all
      else resolve({ code, output: stdout + stderr });
    });
  });
}

let alertNames: string[];
let workDir: string;

beforeAll(async () => {
  if (!existsSync(PROMTOOL)) {
    throw new Error(`${PROMTOOL} is missing: these tests run promtool. Install it with: apt-get install -y prometheus`);
  }
  alertNames = [...(await readFile(RULES, "utf8")).matchAll(/^\s*- alert: (\w+)\s*$/gm)].map((m) => m[1]!);
  workDir = await mkdtemp(join(tmpdir(), "sluice-alerts-"));
});

afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe("alert rules", () => {
  it("has the gateway down, 5xx ratio, channel down, TTFT, queue and budget alerts", () => {
    expect(alertNames).toEqual(expect.arrayContaining([
      "SluiceDown", "SluiceHigh5xxRatio", "SluiceChannelDown", "SluiceSlowTimeToFirstToken",
      "SluiceChannelQueueFull", "SluiceChannelSaturated", "SluiceBudgetRefusalSpike",
    ]));
  });

  it("pass promtool check rules", async () => {
    const run = await promtool("check", "rules", RULES);
    expect(run.output).toContain(`SUCCESS: ${alertNames.length} rules found`);
    expect(run.code, run.output).toBe(0);
  });

  it("pass their promtool unit tests", async () => {
    const run = await promtool("test", "rules", RULE_TESTS);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain("SUCCESS");
  });

  it("are each unit-tested firing and quiet", async () => {
    const cases = [...(await readFile(RULE_TESTS, "utf8")).matchAll(/- alertname: (\w+)\s*\n\s*eval_time: [^\n]+\n\s*exp_alerts:( \[\])?/g)];
    for (const name of alertNames) {
      const mine = cases.filter((c) => c[1] === name);
      expect(mine.some((c) => c[2] === undefined), `${name} fires in some case`).toBe(true);
      expect(mine.some((c) => c[2] !== undefined), `${name} stays quiet in some case`).toBe(true);
    }
    expect(new Set(cases.map((c) => c[1]))).toEqual(new Set(alertNames)); // no case for an alert that is gone
  });

  it("fail their unit tests when an alert skips its wait (every `for:` is pinned by a case)", async () => {
    const rules = await readFile(RULES, "utf8");
    const waiting = [...rules.matchAll(/- alert: (\w+)\s*\n(?:(?!\s*- alert:)[^\n]*\n)*?\s*for: /g)].map((m) => m[1]!);
    expect(waiting.length).toBeGreaterThan(5);
    await writeFile(join(workDir, "alerts.yml"), rules.replace(/^\s*for: .*\n/gm, ""));
    await copyFile(RULE_TESTS, join(workDir, "alerts.test.yml"));
    const run = await promtool("test", "rules", join(workDir, "alerts.test.yml"));
    expect(run.code).toBe(1);
    for (const name of waiting) expect(run.output, name).toContain(`alertname: ${name},`);
  });
});
