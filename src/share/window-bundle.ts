// The share window's script as browsers get it: the sources in ./window bundled with marked and
// DOMPurify into one minified file. `npm run build` (scripts/build.mjs) calls this and writes the
// result beside the built page module, which serves it; the gateway run from its sources (tsx,
// `npm run dev`, the tests) calls it on the first request. esbuild, marked and DOMPurify are dev
// dependencies: production never loads this module (docs/operations.md#build).
import { fileURLToPath } from "node:url";

/** The bundle's file name, beside page.js in dist/share/. */
export const WINDOW_BUNDLE_FILE = "window.bundle.js";

const WINDOW_ENTRY = fileURLToPath(new URL("./window/main.js", import.meta.url));

export async function bundleShareWindow(): Promise<string> {
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [WINDOW_ENTRY],
    bundle: true,
    write: false,
    minify: true,
    format: "iife",
    platform: "browser",
    // browsers of the last few years, phones included
    target: "es2020",
    legalComments: "none",
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}
