// Vitest global setup: builds dist/ once before any test file runs (only when a source changed,
// as `npm start` does), so tests that start the built gateway never race a rebuild.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "./main-process.js";

export default function setup(): void {
  execFileSync(process.execPath, [join(REPO_ROOT, "scripts/build.mjs"), "--if-changed"], { stdio: "inherit" });
}
