// What `npm install`, `npm run build` and `npm start` make of the checkout (docs/operations.md#build):
// dist/ holds the share window's bundle and the built gateway runs without any dev dependency;
// without esbuild a dist/ built from the same sources is used and a stale or missing one is
// explained; package-lock.json already agrees with package.json, so an install does not rewrite it.
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILT_ENTRY, REPO_ROOT, createMainProcesses } from "./support/main-process.js";

const run = promisify(execFile);
const processes = createMainProcesses();
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "sluice-build-"));
});
afterAll(async () => {
  await processes.killAll();
  rmSync(dir, { recursive: true, force: true });
});

// Resolving a dev dependency fails in the gateway's process, as after `npm ci --omit=dev`.
const DEV_ONLY = ["esbuild", "marked", "dompurify", "tsx", "listhen", "preact", "uplot"];
const HOOKS = `export async function resolve(specifier, context, next) {
  if (${JSON.stringify(DEV_ONLY)}.includes(specifier)) throw Object.assign(new Error("dev dependency " + specifier + " is not installed"), { code: "ERR_MODULE_NOT_FOUND" });
  return next(specifier, context);
}`;
const WITHOUT_DEV_DEPENDENCIES = `data:text/javascript,${encodeURIComponent(
  `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`,
)}`;

describe("the build", () => {
  it("bundles the share window into dist/, and the built gateway serves it with no dev dependency resolvable", async () => {
    const built = readFileSync(join(REPO_ROOT, "dist/share/window.bundle.js"), "utf8");
    expect(built).toContain("DOMPurify");
    // the shipped config, its store in memory
    const config = join(dir, "config.json");
    const shipped = JSON.parse(readFileSync(join(REPO_ROOT, "config.json"), "utf8"));
    writeFileSync(config, JSON.stringify({ ...shipped, store: { driver: "memory" } }));

    const gw = await processes.startMain(["--import", WITHOUT_DEV_DEPENDENCIES, ...BUILT_ENTRY], ["--config", config]);
    expect((await fetch(`${gw.url}/chat/share?shareId=demo-public`)).status).toBe(200);
    const script = await fetch(`${gw.url}/chat/share/window.js`);
    expect(script.status).toBe(200);
    expect(await script.text()).toBe(built);
    // the console's bundle too (docs/console.md), read from dist/ with no bundler at hand
    const consoleScript = await fetch(`${gw.url}/console/console.js`);
    expect(consoleScript.status).toBe(200);
    expect(await consoleScript.text()).toBe(readFileSync(join(REPO_ROOT, "dist/console/console.bundle.js"), "utf8"));
    expect(await (await fetch(`${gw.url}/console/console.css`)).text()).toBe(readFileSync(join(REPO_ROOT, "dist/console/console.bundle.css"), "utf8"));
    gw.proc.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
  });

  it("dist/main.js holds the gateway's code: starting it loads no other module of dist/", async () => {
    // a module of dist/ other than the entry, resolved at start, fails it
    const hooks = `export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith(${JSON.stringify(pathToFileURL(join(REPO_ROOT, "dist")).href + "/")}) && !resolved.url.endsWith("/dist/main.js")) throw new Error("loaded " + resolved.url);
  return resolved;
}`;
    const onlyTheEntry = `data:text/javascript,${encodeURIComponent(`import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`)}`;
    const config = join(dir, "one-module.json");
    writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(join(REPO_ROOT, "config.json"), "utf8")), store: { driver: "memory" } }));
    const gw = await processes.startMain(["--import", onlyTheEntry, ...BUILT_ENTRY], ["--config", config]);
    expect((await fetch(`${gw.url}/chat/share/window.js`)).status).toBe(200);
    gw.proc.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
  });

  it("under --enable-source-maps the built gateway's stack traces name the src/ files", async () => {
    // a store that cannot be opened: the fatal start error's stack runs through src/store/ and src/main.ts
    const config = join(dir, "no-store.json");
    const shipped = JSON.parse(readFileSync(join(REPO_ROOT, "config.json"), "utf8"));
    writeFileSync(config, JSON.stringify({ ...shipped, store: { driver: "sqlite", path: join(config, "sluice.db") } }));
    const failed = run(process.execPath, ["--enable-source-maps", ...BUILT_ENTRY, "--config", config], { cwd: REPO_ROOT });
    const { stdout } = (await failed.catch((err: { stdout: string }) => err)) as { stdout: string };
    const stack: string = JSON.parse(stdout.trim().split("\n").at(-1)!).err.stack;
    expect(stack).toMatch(/\(.*\/src\/store\/index\.ts:\d+:\d+\)/);
    expect(stack).toMatch(/\(.*\/src\/main\.ts:\d+:\d+\)/);
    expect(stack).not.toContain("dist/");
  });

  it("the hooks above do refuse a dev dependency", async () => {
    const probe = run(process.execPath, ["--import", WITHOUT_DEV_DEPENDENCIES, "--input-type=module", "-e", 'await import("esbuild")'], { cwd: REPO_ROOT });
    await expect(probe).rejects.toMatchObject({ stderr: expect.stringContaining("dev dependency esbuild is not installed") });
  });

  it("without esbuild: `npm start`'s step stops with the reason, the install's step warns and goes on", async () => {
    // a checkout with no node_modules: esbuild cannot be found from it
    const bare = join(dir, "bare");
    cpSync(join(REPO_ROOT, "src"), join(bare, "src"), { recursive: true });
    cpSync(join(REPO_ROOT, "scripts/build.mjs"), join(bare, "scripts/build.mjs"));
    const build = (flag: string) => run(process.execPath, [join(bare, "scripts/build.mjs"), flag], { cwd: bare });

    const start = build("--if-changed");
    await expect(start).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("dist/ has not been built, and cannot be built here: esbuild, a dev dependency, is not installed") });
    const install = await build("--install");
    expect(install.stderr).toContain("dist/ has not been built, and is left so: esbuild, a dev dependency, is not installed");
  });

  it("without esbuild: a dist/ built from the same sources elsewhere is used as it is, one older than src/ is not", async () => {
    // copies: other files' times than where dist/ was built
    const deployed = join(dir, "deployed");
    for (const path of ["src", "dist", "scripts/build.mjs", "package.json", "package-lock.json"]) cpSync(join(REPO_ROOT, path), join(deployed, path), { recursive: true });
    const build = () => run(process.execPath, [join(deployed, "scripts/build.mjs"), "--if-changed"], { cwd: deployed });
    await expect(build()).resolves.toMatchObject({ stderr: "" });

    // other dependencies: dist/main.js bundles them
    const lock = readFileSync(join(deployed, "package-lock.json"), "utf8");
    writeFileSync(join(deployed, "package-lock.json"), lock.replace(/"version": "[^"]+"/, '"version": "0.0.0-other"'));
    await expect(build()).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("dist/ is older than src/, and cannot be built here") });
    writeFileSync(join(deployed, "package-lock.json"), lock);
    await expect(build()).resolves.toMatchObject({ stderr: "" });

    writeFileSync(join(deployed, "src/dev.ts"), "// changed\n", { flag: "a" });
    await expect(build()).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("dist/ is older than src/, and cannot be built here") });
  });

  it("package-lock.json's root entry agrees with package.json, so `npm install` leaves it as it is", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
    const root = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")).packages[""];
    expect(root).toMatchObject({ name: pkg.name, version: pkg.version, bin: pkg.bin, engines: pkg.engines });
    expect(root.dependencies).toEqual(pkg.dependencies);
    expect(root.devDependencies).toEqual(pkg.devDependencies);
    // npm marks a package whose install runs a script of its own
    const installScript = ["preinstall", "install", "postinstall"].some((s) => s in pkg.scripts);
    expect(root.hasInstallScript ?? false).toBe(installScript);
  });

  it("keeps the build tools out of the production dependencies", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
    for (const name of DEV_ONLY) {
      expect(pkg.dependencies[name], name).toBeUndefined();
      expect(pkg.devDependencies[name], name).toBeDefined();
    }
    expect(pkg.scripts.start).toBe("exec node --enable-source-maps dist/main.js");
  });
});
