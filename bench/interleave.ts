// Cases compared by a ratio run interleaved: after a warm-up each, every case of a group runs one
// slice per round, in an order that turns each round, so that the machine's drift (large on a shared
// 2-core machine) falls on all of them alike.
import { mergeLoads, runLoad, type LoadResult, type LoadSpec } from "./autocannon-case.js";
import { expectAnswer } from "./chat-request.js";

export type TargetName = "direct" | "floor" | "sluice";

export interface LoadCase {
  /** e.g. "stream", "chatId", "20 KB body" */
  name: string;
  target: TargetName;
  spec: LoadSpec;
  /** the target's own process (the upstream's is given per group) */
  pid?: number;
  /** more processes whose CPU is read, e.g. the store's servers (bench/process-cpu.ts) */
  others?: Record<string, number>;
}

export interface CaseResult {
  name: string;
  target: TargetName;
  load?: LoadResult;
  /** each interleaved round's slice, in round order */
  slices?: LoadResult[];
  error?: string;
}

export interface GroupTiming {
  /** measured seconds per case, split over `rounds` */
  seconds: number;
  rounds: number;
  warmupSeconds: number;
  upstreamPid: number;
}

export async function measureGroup(title: string, cases: LoadCase[], t: GroupTiming): Promise<CaseResult[]> {
  const running = cases.map((c) => ({ c, slices: [] as LoadResult[], error: undefined as string | undefined }));
  const slice = t.seconds / t.rounds;
  console.error(`${title}: ${cases.map(label).join(", ")}: ${t.warmupSeconds} s warm-up each, then ${t.rounds} rounds of ${Number(slice.toFixed(2))} s`);
  const pidsOf = (c: LoadCase) => ({ target: c.pid, upstream: t.upstreamPid, others: c.others });
  const guard = async (r: (typeof running)[number], step: () => Promise<void>) => {
    if (r.error) return; // a case that failed once is skipped from then on
    try {
      await step();
    } catch (err) {
      r.error = errorMessage(err);
    }
  };
  for (const r of running) {
    await guard(r, async () => {
      await expectAnswer(r.c.spec.origin, r.c.spec.path, r.c.spec.headers, r.c.spec.body(0));
      if (t.warmupSeconds > 0) await runLoad(r.c.spec, t.warmupSeconds);
    });
  }
  for (let round = 0; round < t.rounds; round++) {
    for (let i = 0; i < running.length; i++) {
      const r = running[(i + round) % running.length]!;
      await guard(r, async () => void r.slices.push(await runLoad(r.c.spec, slice, pidsOf(r.c))));
    }
  }
  return running.map(({ c, slices, error }) =>
    error ? { name: c.name, target: c.target, error } : { name: c.name, target: c.target, load: mergeLoads(slices), slices },
  );
}

export const label = (c: { name: string; target: TargetName }) => `${c.target} ${c.name}`;

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
