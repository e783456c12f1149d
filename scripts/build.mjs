// Transpiles src/ to dist/ (TypeScript types stripped, one file per module, no bundling) and copies
// the share page's assets beside their module. `npm start` runs this first: the gateway then runs
// as plain JavaScript, without tsx's loader thread and per-closure helpers on the request path.
// `--if-changed` (what `npm start` passes) skips the build when dist/ was built from the same
// source files, none changed since.
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { build } from "esbuild";

const root = new URL("..", import.meta.url).pathname;
const src = join(root, "src");
const dist = join(root, "dist");

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

const all = files(src);
const stampFile = join(dist, ".build-stamp");
const stamp = JSON.stringify({ files: all.map((f) => relative(src, f)), newest: Math.max(...all.map((f) => statSync(f).mtimeMs)) });
if (process.argv.includes("--if-changed") && existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) process.exit(0);

rmSync(dist, { recursive: true, force: true });
await build({
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
writeFileSync(stampFile, stamp);
