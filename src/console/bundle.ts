// The console's script and stylesheet as browsers get them (docs/console.md): the preact sources in
// ./app and uPlot bundled by esbuild into one minified script and one stylesheet. `npm run build`
// (scripts/build.mjs) calls this and writes both beside the built module that serves them; the
// gateway run from its sources (tsx, `npm run dev`, the tests) calls it on the first request.
// esbuild, preact and uPlot are dev dependencies: production never loads this module.
import { fileURLToPath } from "node:url";

/** The bundle's files, beside assets.js in dist/console/. */
export const CONSOLE_SCRIPT_FILE = "console.bundle.js";
export const CONSOLE_STYLE_FILE = "console.bundle.css";

const ENTRY = fileURLToPath(new URL("./app/main.jsx", import.meta.url));

export interface ConsoleBundle {
  script: string;
  style: string;
}

export async function bundleConsole(): Promise<ConsoleBundle> {
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    // the names esbuild gives the outputs: main.js and main.css (uPlot's stylesheet and ours)
    outdir: "/console-out",
    minify: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    logLevel: "silent",
  });
  const out = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? "";
  return { script: out(".js"), style: out(".css") };
}
