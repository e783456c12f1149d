// `npm run bench -- --profile [case]`: Sluice under one load with V8's sampling profiler
// (`node --cpu-prof`), then the top self-time functions and where the time goes by module
// (Sluice's own files, each package, Node's internals, GC) — where a performance change starts.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/** Long enough for any function name; a RegExp's "name" is its whole source. */
const MAX_NAME = 60;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** busy time sampled, ms (idle left out) */
  busyMs: number;
  functions: Array<{ name: string; ms: number }>;
  modules: Array<{ name: string; ms: number }>;
  /** how many processes' profiles were summed */
  processes: number;
}

/** The profiles that `--cpu-prof-dir=dir` left there (one per process: a primary and its workers
 *  write one each), summed. */
export async function readProfile(dir: string, top?: number): Promise<ProfileSummary> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".cpuprofile"));
  if (files.length === 0) throw new Error(`no .cpuprofile in ${dir}: did Sluice exit cleanly?`);
  const profiles = await Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, f), "utf8")) as CpuProfile));
  return summarise(profiles, top);
}

export function summarise(profiles: CpuProfile[], top = 25): ProfileSummary {
  const fnMs = new Map<string, number>();
  const moduleMs = new Map<string, number>();
  let busy = 0;
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    profile.samples.forEach((id, i) => {
      const node = byId.get(id);
      // a sample's delta is the time since the one before: charge it to this sample's function
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      if (!node || node.callFrame.functionName === "(idle)") return;
      busy += ms;
      const where = place(node.callFrame.url);
      const name = (node.callFrame.functionName || "(anonymous)").slice(0, MAX_NAME);
      const fn = `${name}${where ? ` ${where}:${node.callFrame.lineNumber + 1}` : ""}`;
      fnMs.set(fn, (fnMs.get(fn) ?? 0) + ms);
      const mod = moduleOf(node.callFrame.functionName, where);
      moduleMs.set(mod, (moduleMs.get(mod) ?? 0) + ms);
    });
  }
  const ranked = (m: Map<string, number>) => [...m].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms).slice(0, top);
  return { busyMs: busy, functions: ranked(fnMs), modules: ranked(moduleMs), processes: profiles.length };
}

/** A URL shortened to what says where the code lives: dist/…, a package's own path, node:… */
function place(url: string): string {
  if (!url) return "";
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  if (inPackage) return `${inPackage[1]}/${inPackage[2]}`;
  const inRepo = /\/(dist|src|bench)\/(.*)$/.exec(url);
  if (inRepo) return `${inRepo[1]}/${inRepo[2]}`;
  return url.replace(/^file:\/\//, "");
}

function moduleOf(functionName: string, where: string): string {
  if (!where) return functionName.startsWith("(") ? functionName : "(native: socket and file writes, crypto, ...)";
  if (where.startsWith("node:")) return "node: internals";
  if (where.startsWith("dist/")) return where;
  return where.split("/").slice(0, where.startsWith("@") ? 2 : 1).join("/");
}
