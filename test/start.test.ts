// What the README tells a new user: `npm start` builds and starts the gateway on the shipped
// config.json, and the README's first curl request answers with no model server running. Signals
// as Docker and systemd send them: to the npm process, to node itself; SIGHUP reloads.
import { execFile, spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { Pool } from "undici";
import { BUILT_ENTRY, REPO_ROOT, createMainProcesses, freePort } from "./support/main-process.js";
import { parseSse, readUntil } from "./support/sse.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const processes = createMainProcesses();
let dir: string;

let upstream: Upstream;

beforeAll(async () => {
  upstream = await startUpstream({ chunks: 200, chunkDelayMs: 50 });
  // a folder of its own, holding only the shipped config: the store lands in ./data there
  dir = mkdtempSync(join(tmpdir(), "sluice-start-"));
  copyFileSync(join(REPO_ROOT, "config.json"), join(dir, "config.json"));
});
afterAll(async () => {
  await processes.killAll();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("npm start", () => {
  it("does not rebuild dist/ when no source changed since the last build", async () => {
    // vitest's global setup built dist/; `npm start`'s prestart step finds it up to date
    const before = statSync(join(REPO_ROOT, "dist/main.js")).mtimeMs;
    await promisify(execFile)(process.execPath, [join(REPO_ROOT, "scripts/build.mjs"), "--if-changed"]);
    expect(statSync(join(REPO_ROOT, "dist/main.js")).mtimeMs).toBe(before);
  });

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

/** A config in the test's folder: one channel to the slow test upstream, a SQLite store, short grace. */
function slowConfig(name: string, extraKeys: unknown[] = []): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify({
    server: { shutdownTimeoutMs: 500, log: { level: "info" } },
    store: { driver: "sqlite", path: join(dir, `${name}.db`) },
    channels: [{ name: "up", baseUrl: upstream.url, models: ["m"], healthCheck: { intervalMs: 0 } }],
    llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
    apps: [{ id: "app", model: "m" }],
    apiKeys: [{ name: "k", kind: "app", appId: "app", key: "sk-signal-test-key" }, ...extraKeys],
  }));
  return path;
}

const ask = (url: string, stream: boolean, key = "sk-signal-test-key") =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], stream }),
  });

describe("signals", () => {
  it("SIGTERM cuts a stream that outlasts shutdownTimeoutMs with an error event, writes its usage row, and exits 0", async () => {
    const config = slowConfig("cut.json");
    const gw = await processes.startMain(BUILT_ENTRY, ["--config", config]);
    const res = await ask(gw.url, true);
    const { text, reader } = await readUntil(res, (t) => t.includes('"content"'));
    gw.proc.kill("SIGTERM");
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    expect(JSON.parse(parseSse(text + rest).at(-1)!.data).error.code).toBe("shutting_down");
    expect(await gw.exited).toBe(0);
    const db = new Database(join(dir, "cut.json.db"), { readonly: true });
    try {
      const rows = db.prepare("SELECT status, output_tokens FROM usage").all() as Array<{ status: number; output_tokens: number }>;
      expect(rows).toHaveLength(1);
      expect(rows[0]!.status).toBe(503);
      expect(rows[0]!.output_tokens).toBeGreaterThan(0);
    } finally {
      db.close();
    }
  });

  it("SIGTERM to the npm start process stops npm and the gateway with exit 0, leaving no process on the port", async () => {
    const config = slowConfig("npm.json");
    const port = await freePort();
    const npm = spawn("npm", ["start", "--", "--config", config, "--port", String(port)], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    npm.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    npm.stderr!.on("data", () => {});
    const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
    await new Promise<void>((resolve) => {
      const check = () => /listening on/.test(out) && (npm.stdout!.off("data", check), resolve());
      npm.stdout!.on("data", check);
    });
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    npm.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(out).toContain("stopped");
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it("SIGHUP reloads the config and never stops the gateway", async () => {
    const config = slowConfig("hup.json");
    const gw = await processes.startMain(BUILT_ENTRY, ["--config", config]);
    expect((await ask(gw.url, false, "sk-signal-added-key")).status).toBe(401);
    slowConfig("hup.json", [{ name: "added", kind: "app", appId: "app", key: "sk-signal-added-key" }]);
    gw.proc.kill("SIGHUP");
    await expect.poll(async () => (await ask(gw.url, false, "sk-signal-added-key")).status, { interval: 100, timeout: 5000 }).toBe(200);
    expect(gw.proc.exitCode).toBeNull();
  });

  it("saving the config file reloads it while a stream started on the old config finishes", async () => {
    const config = slowConfig("watch.json");
    const gw = await processes.startMain(BUILT_ENTRY, ["--config", config]);
    const res = await ask(gw.url, true);
    const { text, reader } = await readUntil(res, (t) => t.includes('"content"'));
    expect((await ask(gw.url, false, "sk-signal-added-key")).status).toBe(401);
    slowConfig("watch.json", [{ name: "added", kind: "app", appId: "app", key: "sk-signal-added-key" }]);
    await expect.poll(async () => (await ask(gw.url, false, "sk-signal-added-key")).status, { interval: 100, timeout: 5000 }).toBe(200);
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    expect(parseSse(text + rest).at(-1)!.data).toBe("[DONE]");
    // an invalid save keeps the running config
    writeFileSync(config, "{ not json");
    await expect.poll(() => gw.stdout() + gw.stderr(), { interval: 50, timeout: 5000 }).toContain("config refused");
    expect((await ask(gw.url, false, "sk-signal-added-key")).status).toBe(200);
  });

  it("answers requests in flight at SIGTERM with connection: close, so pooling clients go elsewhere", async () => {
    const slow = await startUpstream({ firstByteDelayMs: 300 });
    try {
      const path = join(dir, "keepalive.json");
      writeFileSync(path, JSON.stringify({
        server: { shutdownTimeoutMs: 10_000, log: { level: "warn" } },
        store: { driver: "memory" },
        channels: [{ name: "up", baseUrl: slow.url, models: ["m"], healthCheck: { intervalMs: 0 } }],
        llmModels: [{ model: "m", maxContext: 4000, maxResponse: 100 }],
        apps: [{ id: "app", model: "m" }],
        apiKeys: [{ name: "k", kind: "app", appId: "app", key: "sk-signal-test-key" }],
      }));
      const gw = await processes.startMain(BUILT_ENTRY, ["--config", path]);
      const pool = new Pool(gw.url, { connections: 1 });
      const asking = pool.request({
        path: "/v1/chat/completions",
        method: "POST",
        headers: { authorization: "Bearer sk-signal-test-key", "content-type": "application/json" },
        body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }),
      });
      await slow.waitForRequests(1);
      gw.proc.kill("SIGTERM");
      const res = await asking;
      await res.body.text();
      expect(res.statusCode).toBe(200);
      expect(res.headers.connection).toBe("close");
      expect(await gw.exited).toBe(0);
      await pool.close();
    } finally {
      await slow.close();
    }
  });

  it("a client trickling its body does not hold the exit past shutdownTimeoutMs", async () => {
    const config = slowConfig("trickle.json");
    const gw = await processes.startMain(BUILT_ENTRY, ["--config", config]);
    const { port } = new URL(gw.url);
    const { connect } = await import("node:net");
    const socket = connect(Number(port), "127.0.0.1");
    socket.on("error", () => {});
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-signal-test-key\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
    const trickle = setInterval(() => socket.write("a"), 100);
    const started = performance.now();
    gw.proc.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    clearInterval(trickle);
    socket.destroy();
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe("last resort", () => {
  it("logs and counts an error thrown outside every handler, and the gateway carries on", async () => {
    const config = slowConfig("resort.json");
    // a module preloaded into the gateway's process throws from a timer when told, once the gateway listens
    const preload = `data:text/javascript,process.on("SIGUSR2", () => setTimeout(() => { throw new Error("escaped everything") }))`;
    const gw = await processes.startMain(["--import", preload, ...BUILT_ENTRY], ["--config", config]);
    gw.proc.kill("SIGUSR2");
    await expect.poll(() => gw.stdout(), { interval: 50, timeout: 5000 }).toContain("escaped everything");
    expect(gw.stdout()).toContain("uncaught_exception (the gateway carries on)");
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/sluice_process_errors_total\{kind="uncaught_exception"\} 1/);
    expect((await ask(gw.url, false)).status).toBe(200);
    expect(gw.proc.exitCode).toBeNull();
  });
});

describe("as PID 1 in a container", () => {
  // a PID namespace of its own makes the gateway PID 1, where the kernel ignores every signal that
  // has no handler: SIGTERM works only because the gateway handles it
  const canUnshare = spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "true"]).status === 0;
  it.skipIf(!canUnshare)("SIGTERM as PID 1 drains and exits 0", async () => {
    const config = slowConfig("pid1.json");
    const port = await freePort();
    const child = spawn("unshare", ["--pid", "--fork", "--kill-child", "--mount-proc", process.execPath, ...BUILT_ENTRY, "--config", config, "--port", String(port)], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", () => {});
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    await expect.poll(() => out, { interval: 50, timeout: 10_000 }).toContain("listening on");
    const res = await ask(`http://127.0.0.1:${port}`, true);
    const { text, reader } = await readUntil(res, (t) => t.includes('"content"'));
    // the gateway is PID 1 inside, so signal it by its outer pid: unshare's child
    const inner = spawnSync("pgrep", ["-P", String(child.pid)], { encoding: "utf8" }).stdout.trim();
    expect(inner).toMatch(/^\d+$/);
    process.kill(Number(inner), "SIGTERM");
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    expect(JSON.parse(parseSse(text + rest).at(-1)!.data).error.code).toBe("shutting_down");
    expect(await exited).toBe(0);
    expect(out).toContain("stopped");
  });
});
