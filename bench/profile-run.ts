// `npm run bench -- --profile [case]` and `--heap-profile [case]` (bench/run.ts): instead of the
// sections, Sluice under one load with node --cpu-prof, or with V8's sampling heap profiler.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { runLoad } from "./autocannon-case.js";
import { summariseHeap } from "./heap-profile.js";
import { LOADS } from "./loads.js";
import type { NodeServer } from "./node-process.js";
import { readProfile } from "./profile.js";
import { printHeapProfile, printProfile } from "./report.js";
import { startSharedSluice, startSharedStore } from "./shared-store.js";
import { startSluice } from "./sluice-process.js";

export interface ProfileFlags {
  seconds: number;
  warmupSeconds: number;
  /** rows of each table */
  top: number;
  store: string;
  workers: number;
  /** where bench/heap-sampling.ts was built */
  outDir: string;
}

/** Sluice with `--cpu-prof` under one case's load; it writes the profile when it exits. */
export async function profile(upstream: NodeServer, mode: string, flags: ProfileFlags): Promise<void> {
  const loadOf = LOADS[mode];
  if (!loadOf) throw new Error(`--profile takes one of ${Object.keys(LOADS).join(", ")}, not ${mode}`);
  const dir = await mkdtemp(join(tmpdir(), "sluice-profile-"));
  const nodeArgs = ["--cpu-prof", `--cpu-prof-dir=${dir}`];
  const workers = flags.workers;
  if (workers !== 1 && flags.store !== "postgres") throw new Error("--workers needs --store postgres (server.workers needs the shared store)");
  const shared = flags.store === "postgres" ? await startSharedStore() : undefined;
  try {
    // node:cluster forks the workers with the primary's node arguments: each writes its own profile
    const sluice = shared ? await startSharedSluice(upstream.url, shared, workers, nodeArgs) : await startSluice(upstream.url, { nodeArgs });
    try {
      const load = loadOf(sluice.url);
      await runLoad(load, flags.warmupSeconds);
      console.error(`profile: Sluice under the ${mode} load for ${flags.seconds} s`);
      const result = await runLoad(load, flags.seconds, { target: sluice.pid, upstream: upstream.pid });
      await sluice.stop();
      printProfile(mode, result, await readProfile(dir, flags.top));
    } finally {
      await sluice.stop();
    }
  } finally {
    await shared?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Sluice with V8's sampling heap profiler (bench/heap-sampling.ts) under one case's load, after
 *  its warm-up: what of it reached the old generation, and where it was made. */
export async function heapProfile(upstream: NodeServer, mode: string, flags: ProfileFlags): Promise<void> {
  const loadOf = LOADS[mode];
  if (!loadOf) throw new Error(`--heap-profile takes one of ${Object.keys(LOADS).join(", ")}, not ${mode}`);
  const dir = await mkdtemp(join(tmpdir(), "sluice-heap-"));
  const file = join(dir, "sluice.heapprofile");
  process.env.SLUICE_HEAP_PROFILE = file; // the Sluice process inherits it
  try {
    const sluice = await startSluice(upstream.url, { nodeArgs: [`--import=${resolve(flags.outDir, "heap-sampling.js")}`] });
    try {
      const load = loadOf(sluice.url);
      await runLoad(load, flags.warmupSeconds);
      process.kill(sluice.pid, "SIGUSR2"); // sampling starts
      console.error(`heap profile: Sluice under the ${mode} load for ${flags.seconds} s`);
      const result = await runLoad(load, flags.seconds, { target: sluice.pid, upstream: upstream.pid });
      process.kill(sluice.pid, "SIGUSR2"); // the profile is written
      const written = await waitForFile(file);
      const profile = JSON.parse(written) as { head?: Parameters<typeof summariseHeap>[0]; error?: string };
      if (!profile.head) throw new Error(`the heap profiler said: ${profile.error ?? "nothing"}`);
      printHeapProfile(mode, result, summariseHeap(profile.head, flags.top));
    } finally {
      await sluice.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The file's text once it is written whole (the profile is one JSON write). */
async function waitForFile(file: string): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const text = await readFile(file, "utf8").catch(() => "");
    if (text.endsWith("}")) return text;
    await sleep(100);
  }
  throw new Error(`no heap profile in ${file} after 30 s`);
}

