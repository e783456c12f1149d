// `npm run dev`: the gateway from its TypeScript sources behind listhen's dev server, reloaded when a
// source changes (docs/operations.md#development-server). Run in a copy of the sources, so the edit
// that proves the reload never touches the repository.
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { REPO_ROOT, freePort } from "./support/main-process.js";

// jiti transpiles every source module on the first load, and again on each reload: seconds on a
// busy 2-core machine
const LOAD_MS = 120_000;

let copy: string;
let dev: ChildProcess | undefined;

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), "sluice-dev-"));
  cpSync(join(REPO_ROOT, "src"), join(copy, "src"), { recursive: true });
  cpSync(join(REPO_ROOT, "package.json"), join(copy, "package.json"));
  symlinkSync(join(REPO_ROOT, "node_modules"), join(copy, "node_modules"), "dir");
  // ./config.json, as `npm run dev` reads it: the shipped one (its SQLite store lands in the copy)
  cpSync(join(REPO_ROOT, "config.json"), join(copy, "config.json"));
});
afterAll(() => {
  // a test that failed midway: npm and listhen alike (its own process group)
  if (dev?.pid && dev.exitCode === null && dev.signalCode === null) process.kill(-dev.pid, "SIGKILL");
  rmSync(copy, { recursive: true, force: true });
});

const hello = (url: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: "Bearer sk-sluice-demo-app-key", "content-type": "application/json" },
    body: JSON.stringify({ model: "demo-echo", messages: [{ role: "user", content: "Hello!" }] }),
  }).then(async (res) => {
    const text = await res.text();
    // listhen's own pages (loading, a load error) are HTML
    const content = text.startsWith("{") ? (JSON.parse(text).choices?.[0]?.message?.content as string | undefined) : undefined;
    return { status: res.status, content };
  });

const count = (text: string, part: string) => text.split(part).length - 1;

/** The gateway's own liveness answer (listhen answers "Server is loading..." until the entry is loaded). */
const live = (url: string) =>
  fetch(`${url}/healthz`).then(
    (res) => res.text(),
    () => "",
  );

describe("npm run dev", () => {
  it(
    "serves the gateway through listhen, reloads it when a source file changes, and stops on SIGTERM",
    async () => {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      // as a developer runs it: without vitest's NODE_ENV=test and TEST, which silence listhen's log
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(NODE_ENV|TEST|VITEST.*)$/.test(k)));
      dev = spawn("npm", ["run", "dev", "--", "--port", String(port)], { cwd: copy, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      onTestFailed(() => console.error(`npm run dev said:\n${out}`));
      dev.stdout!.on("data", (d: Buffer) => (out += d.toString()));
      dev.stderr!.on("data", (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((resolve) => dev!.once("exit", (code) => resolve(code)));
      const poll = { interval: 200, timeout: LOAD_MS };

      // 1. Up: the gateway's /healthz, the echo model, the share window's script bundled from the sources.
      await expect.poll(() => live(url), poll).toBe('{"status":"ok"}');
      expect(await hello(url)).toEqual({ status: 200, content: "Echo: Hello!" });
      const script = await fetch(`${url}/chat/share/window.js`);
      expect(script.status).toBe(200);
      expect(await script.text()).toContain("DOMPurify");

      // 2. A source file changes (once the watcher is on), and changes again while the load that
      // began is under way (an editor saving twice): the loads take turns, the last one answers.
      await expect.poll(() => out, poll).toContain("Watching");
      const echo = join(copy, "src/demo/echo-channel.ts");
      const changed = readFileSync(echo, "utf8").replace("`Echo: ${said}`", "`Reloaded: ${said}`");
      writeFileSync(echo, changed);
      await expect.poll(() => count(out, "Reloading server"), poll).toBeGreaterThanOrEqual(1);
      writeFileSync(echo, changed);
      await expect.poll(() => count(out, "Reloading server"), poll).toBeGreaterThanOrEqual(2);
      // each load logs its gateway (in batches: polled)
      await expect.poll(() => count(out, "gateway rebuilt from the changed sources"), poll).toBe(count(out, "Reloading server"));
      expect(await hello(url)).toEqual({ status: 200, content: "Reloaded: Hello!" });
      expect(out).not.toMatch(/ERROR|did not close cleanly/);

      // 3. SIGTERM to npm stops npm and the dev server, and frees the port.
      dev.kill("SIGTERM");
      expect(await exited).toBe(0);
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    },
    3 * LOAD_MS,
  );
});
