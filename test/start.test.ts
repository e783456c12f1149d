// What the README tells a new user: `npm start` builds and starts the gateway on the shipped
// config.json, and the README's first curl request answers with no model server running.
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILT_ENTRY, REPO_ROOT, createMainProcesses } from "./support/main-process.js";

const processes = createMainProcesses();
let dir: string;

beforeAll(async () => {
  await promisify(execFile)(process.execPath, [join(REPO_ROOT, "scripts/build.mjs")]);
  // a folder of its own, holding only the shipped config: the store lands in ./data there
  dir = mkdtempSync(join(tmpdir(), "sluice-start-"));
  copyFileSync(join(REPO_ROOT, "config.json"), join(dir, "config.json"));
});
afterAll(async () => {
  await processes.killAll();
  rmSync(dir, { recursive: true, force: true });
});

describe("npm start", () => {
  it("serves the README's first request from the built gateway and the shipped config, then stops on SIGTERM", async () => {
    const gw = await processes.startMain(BUILT_ENTRY, [], dir);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer sk-sluice-demo-app-key", "content-type": "application/json" },
      body: JSON.stringify({ model: "demo-echo", messages: [{ role: "user", content: "Hello!" }] }),
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.choices[0].message.content).toBe("Echo: Hello!");
    expect(body.usage.total_tokens).toBeGreaterThan(0);
    expect(existsSync(join(dir, "data", "sluice.db"))).toBe(true);
    gw.proc.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
  });

  it("serves the share-link chat window from the build", async () => {
    const gw = await processes.startMain(BUILT_ENTRY, [], dir);
    const page = await fetch(`${gw.url}/chat/share?shareId=demo-public`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(await page.text()).toContain('id="send"');
  });
});
