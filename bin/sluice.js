#!/usr/bin/env node
// `sluice` (`npx sluice …`, `npm run sluice -- …`): runs the built command line, dist/cli.js, which
// `npm install` builds; when it is missing (installed with --ignore-scripts) it is built first.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const cli = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(cli)) {
  try {
    // the build's own output goes to stderr: stdout carries only the command's answer (a new key)
    execFileSync(process.execPath, [fileURLToPath(new URL("../scripts/build.mjs", import.meta.url))], { stdio: ["ignore", 2, 2] });
  } catch {
    process.exit(1); // the build said why (esbuild, a dev dependency, missing)
  }
}
await import(cli.href);
