// Builds dist/: src/ transpiled by esbuild (types stripped, one file per module), the share page's
// assets copied beside their module, the share window's script bundled with marked and DOMPurify
// (dist/share/window.bundle.js, see src/share/window-bundle.ts), the console's script and style
// bundled with preact and uPlot (dist/console/console.bundle.{js,css}, src/console/bundle.ts), the token encodings' tables as JSON
// (dist/tokens/*.ranks.json, see src/tokens/encodings.ts), then the gateway's entry,
// dist/main.js, bundled with its dependencies into one file: Node loads one module instead of
// hundreds, which halves the time to ready (docs/performance.md#start-up). `npm start` then runs
// plain JavaScript: no tsx loader on the request path, no bundling on a request.
// esbuild, marked and DOMPurify are dev dependencies, so this runs where those are installed:
// `npm install`/`npm ci` (the prepare step), `npm run build`, CI, the container's build stage.
//   --if-changed  (`npm start`, the test setup) nothing to do when dist/ was built from sources
//                 of the same contents
//   --install     (the prepare step) where esbuild is missing (`npm ci --omit=dev`) say so and leave
//                 dist/ as it is instead of failing the install; `npm start` stops with the reason
import { createHash } from "node:crypto";
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
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
// the sources' contents, this script's (it decides what dist/ holds) and the dependencies' (bundled
// into dist/main.js): a dist/ built from the same sources elsewhere (a build machine) counts as up
// to date, whatever the files' times
const hash = createHash("sha256");
const lockFiles = ["package.json", "package-lock.json"].map((f) => join(root, f)).filter((f) => existsSync(f));
for (const file of [...all, fileURLToPath(import.meta.url), ...lockFiles]) hash.update(`${relative(root, file)}\0`).update(readFileSync(file)).update("\0");
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

// 3. The modules, their assets, the share window's and the console's bundles (docs/console.md) and the encodings' tables as JSON (each
// made by the built module that reads it).
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
const { CONSOLE_SCRIPT_FILE, CONSOLE_STYLE_FILE, bundleConsole } = await import(pathToFileURL(join(dist, "console/bundle.js")).href);
const consoleBundle = await bundleConsole();
writeFileSync(join(dist, "console", CONSOLE_SCRIPT_FILE), consoleBundle.script);
writeFileSync(join(dist, "console", CONSOLE_STYLE_FILE), consoleBundle.style);
const { TOKENIZER_NAMES, ranksFile, ranksJson } = await import(pathToFileURL(join(dist, "tokens/encodings.js")).href);
for (const name of TOKENIZER_NAMES) writeFileSync(ranksFile(name), ranksJson(name));
await bundleGateway(esbuild);
writeFileSync(stampFile, stamp);

// 4. dist/main.js over its transpiled copy: src/main.ts and everything it imports in one ESM file.
// Left outside, loaded from node_modules as before: the native better-sqlite3; what the gateway
// loads only when a config needs it (pg, ioredis, the token encodings, pino-pretty) or in a worker
// (music-metadata); and every dev dependency (a production install has none; the share window's
// bundler is only imported when running from the sources).
async function bundleGateway(esbuild) {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const external = ["better-sqlite3", "pg", "ioredis", "gpt-tokenizer", "music-metadata", "pino-pretty", ...Object.keys(pkg.devDependencies)];
  await esbuild.build({
    entryPoints: [join(src, "main.ts")],
    outfile: join(dist, "main.js"),
    bundle: true,
    external,
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: true,
    // the map without the sources' text (stack traces need only the mappings): `--enable-source-maps`
    // parses it at start
    sourcesContent: false,
    // a third fewer bytes for V8 to parse at start; names are kept, so are the stack traces' names
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: "warning",
    // the CommonJS packages inside (undici, prom-client, pino) require Node's own modules
    banner: { js: 'import { createRequire as __bundleRequire } from "node:module"; const require = __bundleRequire(import.meta.url);' },
    plugins: [moduleUrls()],
  });
}

// A module's import.meta.url in the bundle still names its own transpiled file (dist/share/page.js
// finds page.html and the window's bundle beside it), not dist/main.js.
function moduleUrls() {
  return {
    name: "module-urls",
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const code = readFileSync(args.path, "utf8");
        if (!args.path.startsWith(src) || !code.includes("import.meta.url")) return undefined;
        const own = `./${relative(src, args.path).split(sep).join("/").replace(/\.ts$/, ".js")}`;
        return { contents: code.replaceAll("import.meta.url", `new URL(${JSON.stringify(own)}, import.meta.url).href`), loader: "ts" };
      });
    },
  };
}

function fail(message) {
  console.error(`sluice: ${message}`);
  process.exit(1);
}
