// Builds dist/: src/ transpiled by esbuild (types stripped, one file per module, no bundling), the
// share page's assets copied beside their module, and the share window's script bundled with marked
// and DOMPurify (dist/share/window.bundle.js, see src/share/window-bundle.ts). `npm start` then runs
// plain JavaScript: no tsx loader on the request path, no bundling on a request.
// esbuild, marked and DOMPurify are dev dependencies, so this runs where those are installed:
// `npm install`/`npm ci` (the prepare step), `npm run build`, CI, the container's build stage.
//   --if-changed  (`npm start`, the test setup) nothing to do when dist/ was built from sources
//                 of the same contents
//   --install     (the prepare step) where esbuild is missing (`npm ci --omit=dev`) say so and leave
//                 dist/ as it is instead of failing the install; `npm start` stops with the reason
import { createHash } from "node:crypto";
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const src = join(root, "src");
const dist = join(root, "dist");
const stampFile = join(dist, ".build-stamp");
const ifChanged = process.argv.includes("--if-changed");
const atInstall = process.argv.includes("--install");

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

// 1. Up to date? (a copy holding dist/ without its sources runs what it has)
if (!existsSync(src)) {
  if (existsSync(join(dist, "main.js"))) process.exit(0);
  fail("neither src/ nor a built dist/ is here");
}
const all = files(src).sort(); // one order on every file system
// the sources' contents, and this script's (it decides what dist/ holds): a dist/ built from the
// same sources elsewhere (a build machine) counts as up to date, whatever the files' times
const hash = createHash("sha256");
for (const file of [...all, fileURLToPath(import.meta.url)]) hash.update(`${relative(root, file)}\0`).update(readFileSync(file)).update("\0");
const stamp = hash.digest("hex");
if ((ifChanged || atInstall) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) process.exit(0);

// 2. esbuild, a dev dependency.
const esbuild = await import("esbuild").catch((err) => {
  if (err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
  return undefined;
});
if (!esbuild) {
  const why = existsSync(stampFile) ? "dist/ is older than src/" : "dist/ has not been built";
  const advice =
    "esbuild, a dev dependency, is not installed (a production install: --omit=dev). Build where the dev dependencies are " +
    "(`npm ci && npm run build`) and bring dist/ along, or install them here (`npm install`).";
  if (atInstall) {
    console.warn(`sluice: ${why}, and is left so: ${advice}`);
    process.exit(0);
  }
  fail(`${why}, and cannot be built here: ${advice}${existsSync(stampFile) ? " `node dist/main.js` runs the old build as it is." : ""}`);
}

// 3. The modules, their assets, then the share window's bundle (made by the built module itself).
rmSync(dist, { recursive: true, force: true });
await esbuild.build({
  entryPoints: all.filter((f) => f.endsWith(".ts")),
  outdir: dist,
  outbase: src,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: true,
  logLevel: "warning",
});
for (const asset of all.filter((f) => !f.endsWith(".ts"))) cpSync(asset, join(dist, relative(src, asset)));
const { WINDOW_BUNDLE_FILE, bundleShareWindow } = await import(pathToFileURL(join(dist, "share/window-bundle.js")).href);
writeFileSync(join(dist, "share", WINDOW_BUNDLE_FILE), await bundleShareWindow());
writeFileSync(stampFile, stamp);

function fail(message) {
  console.error(`sluice: ${message}`);
  process.exit(1);
}
