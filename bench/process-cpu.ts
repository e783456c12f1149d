// CPU time of the processes a load slice involves, read from /proc (Linux) before and after it:
// the target and its child processes (a Sluice with `server.workers` forks them), the upstream,
// other process trees named by the caller (PostgreSQL: the postmaster and one backend per
// connection; Redis), and the bench's own process, which runs the load generator.
import { readdir, readFile } from "node:fs/promises";

/** The processes whose CPU time a slice reads; each is the root of a tree (it and its children). */
export interface Pids {
  /** the target's process (absent for the upstream alone) */
  target?: number;
  upstream?: number;
  /** more trees, summed per name, e.g. `{ PostgreSQL: postmasterPid }` */
  others?: Record<string, number>;
}

/** Cumulative CPU µs by label: `target`, `target child N` (by pid order), `upstream`, each name of
 *  `others`, and `load generator`. */
export type CpuSample = Map<string, number>;

export const LOAD_GENERATOR = "load generator";
export const TARGET = "target";

/** Linux's USER_HZ, the unit of /proc/<pid>/stat times: 100 on every mainstream architecture. */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time (user + system) a process has used so far, in microseconds. */
export async function readCpuUs(pid: number): Promise<number> {
  const fields = statFields(await readFile(`/proc/${pid}/stat`, "utf8"));
  // utime and stime are the 14th and 15th fields overall
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS_PER_SECOND;
}

export async function parentPid(pid: number): Promise<number> {
  return Number(statFields(await readFile(`/proc/${pid}/stat`, "utf8"))[1]);
}

export async function sampleCpu(pids: Pids): Promise<CpuSample> {
  const others = Object.entries(pids.others ?? {});
  const withChildren = pids.target !== undefined || others.length > 0;
  const children = withChildren ? await childrenByParent() : new Map<number, number[]>();
  // [label, pid] in the order the labels are shown
  const parts: Array<[string, number]> = [];
  if (pids.target !== undefined) {
    parts.push([TARGET, pids.target]);
    (children.get(pids.target) ?? []).forEach((pid, i) => parts.push([`${TARGET} child ${i + 1}`, pid]));
  }
  if (pids.upstream !== undefined) parts.push(["upstream", pids.upstream]);
  for (const [name, root] of others) [root, ...(children.get(root) ?? [])].forEach((pid) => parts.push([name, pid]));
  const times = await Promise.all(parts.map(([, pid]) => readCpuUs(pid).catch(() => undefined))); // it may end meanwhile
  const sample: CpuSample = new Map();
  parts.forEach(([label], i) => {
    const us = times[i];
    if (us !== undefined) sample.set(label, (sample.get(label) ?? 0) + us);
  });
  const self = process.cpuUsage();
  sample.set(LOAD_GENERATOR, self.user + self.system);
  return sample;
}

/** CPU µs per request of each label between two samples; a process that started in between counts
 *  whole, one that ended is left out (its time since `before` is lost). */
export function cpuPerRequest(before: CpuSample, after: CpuSample, requests: number): Record<string, number> {
  const out: Record<string, number> = {};
  if (requests === 0) return out;
  for (const [label, us] of after) out[label] = (us - (before.get(label) ?? 0)) / requests;
  return out;
}

/** The target's CPU per request: its own process and its children. */
export function targetCpu(perRequest: Record<string, number>): number | undefined {
  const parts = Object.entries(perRequest).filter(([label]) => label === TARGET || label.startsWith(`${TARGET} child `));
  return parts.length === 0 ? undefined : parts.reduce((n, [, us]) => n + us, 0);
}

/** The child processes of `pid`, sorted by pid. */
export async function childProcesses(pid: number): Promise<number[]> {
  return (await childrenByParent()).get(pid) ?? [];
}

/** Every process's children, sorted by pid, from one pass over /proc. */
async function childrenByParent(): Promise<Map<number, number[]>> {
  const pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name)).map(Number);
  const parents = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/stat`, "utf8").then((s) => Number(statFields(s)[1]), () => undefined)));
  const children = new Map<number, number[]>();
  pids.forEach((pid, i) => {
    const parent = parents[i];
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), pid]);
  });
  for (const list of children.values()) list.sort((a, b) => a - b);
  return children;
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses):
 *  [0] is the state, [1] the parent's pid. */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}
