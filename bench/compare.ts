// `npm run bench:compare -- <other checkout> [--only a,b] [--seconds N] [--rounds N]`: this build and
// another (an older commit's checkout, its dist/ built) under the same loads, interleaved round by
// round against one test upstream process, so a change is judged against what it changed and not
// against a run on another day. Prints each build's RPS and CPU per request, and the median (and
// range) of the per-round CPU ratios.
//   git worktree add ../before <commit> && (cd ../before && npm run build) && npm run bench:compare -- ../before
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { measureGroup, type LoadCase } from "./interleave.js";
import { LOADS } from "./loads.js";
import { spawnNodeServer } from "./node-process.js";
import { machineFacts } from "./report.js";
import { startSluice, type SluiceProcess } from "./sluice-process.js";

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    only: { type: "string", default: "non-stream,chatId,stream,200kb,embeddings,messages,responses" },
    seconds: { type: "string", default: "12" },
    rounds: { type: "string", default: "6" },
    warmup: { type: "string", default: "2" },
  },
});
const OUT = ".bench-out";

async function main(): Promise<void> {
  const other = positionals[0] && resolve(positionals[0]);
  if (!other || !existsSync(`${other}/dist/main.js`)) throw new Error("give the other checkout, its dist/ built: npm run bench:compare -- ../before");
  const loads = flags.only.split(",");
  const unknown = loads.filter((l) => !LOADS[l]);
  if (unknown.length) throw new Error(`unknown load ${unknown.join(", ")}; the loads are ${Object.keys(LOADS).join(", ")}`);
  await build({ entryPoints: ["bench/upstream-process.ts"], bundle: true, packages: "external", outdir: OUT, platform: "node", format: "esm", target: "node20", logLevel: "warning" });
  const facts = await machineFacts();
  const upstream = await spawnNodeServer("test upstream", { args: [`${OUT}/upstream-process.js`], readyPath: "/healthz", ready: (s) => s === 200 });
  const builds: Array<{ name: string; sluice?: SluiceProcess }> = [{ name: "this" }, { name: "other" }];
  try {
    builds[0]!.sluice = await startSluice(upstream.url);
    builds[1]!.sluice = await startSluice(upstream.url, { dist: join(other, "dist") });
    const timing = { seconds: Number(flags.seconds), rounds: Number(flags.rounds), warmupSeconds: Number(flags.warmup), upstreamPid: upstream.pid };
    const rows: string[] = [];
    for (const load of loads) {
      const cases: LoadCase[] = builds.map((b) => ({ name: b.name, target: "sluice", spec: LOADS[load]!(b.sluice!.url), pid: b.sluice!.pid }));
      const [mine, theirs] = await measureGroup(load, cases, timing);
      if (!mine?.load || !theirs?.load) {
        rows.push(`${load.padEnd(11)} ${mine?.error ?? theirs?.error}`);
        continue;
      }
      const cpu = (r: typeof mine) => r.slices!.map((s) => s.cpuUs!.toFixed(0)).join("/");
      // the ratio of each round's slices, as the bench's ratios are (docs/performance.md#reading-the-figures)
      const ratios = mine.slices!.map((s, i) => s.cpuUs! / theirs.slices![i]!.cpuUs!).sort((a, b) => a - b);
      const median = ratios.length % 2 ? ratios[(ratios.length - 1) / 2]! : (ratios[ratios.length / 2 - 1]! + ratios[ratios.length / 2]!) / 2;
      rows.push(
        `${load.padEnd(11)} ${mine.load.rps.toFixed(0).padStart(6)} ${theirs.load.rps.toFixed(0).padStart(6)}  ` +
          `${mine.load.cpuUs!.toFixed(0).padStart(5)} ${theirs.load.cpuUs!.toFixed(0).padStart(5)}  ${median.toFixed(2)}× (${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)})` +
          `   this ${cpu(mine)}; other ${cpu(theirs)}`,
      );
    }
    const end = await machineFacts();
    console.log(`\nthis: ${process.cwd()} (${facts.commit})\nother: ${other}\n${facts.date}, ${facts.cores} × ${facts.cpu}, Node ${facts.node}, load average ${facts.loadAverageStart.toFixed(1)} at start, ${end.loadAverageStart.toFixed(1)} at end`);
    console.log(`${timing.rounds} interleaved rounds of ${(timing.seconds / timing.rounds).toFixed(1)} s per build and load; CPU: the gateway process's µs per request\n`);
    console.log(`load          RPS this/other   CPU this/other  this/other: median of the rounds (range)   per round (µs)`);
    for (const row of rows) console.log(row);
  } finally {
    await Promise.all([...builds.map((b) => b.sluice?.stop()), upstream.stop()]);
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
