// The start-up section (docs/performance.md#sections): fresh Sluices spawned as `npm start` runs
// them, each timed from the spawn to its first /healthz 200 (polled every few ms) — in wall time,
// and in the CPU the process used by then, which other work on the machine moves far less — then
// its first and second chat request's latency: what a gateway that restarts under a supervisor,
// or scales out, costs before and just after it is ready. With a baseline (another commit's dist/,
// `--start-baseline DIR`) both builds start in turn, run after run, so drift falls on both alike.
import { median } from "./autocannon-case.js";
import { CHAT_HEADERS, CHAT_PATH, chatBody } from "./chat-request.js";
import { readCpuUs } from "./process-cpu.js";
import { startSluice } from "./sluice-process.js";

export interface StartUpFigures {
  /** medians, ms */
  readyMs: number;
  /** the CPU the process used until it was ready */
  readyCpuMs: number;
  firstMs: number;
  /** the CPU the process used for the first request (10 ms steps: /proc's clock ticks) */
  firstCpuMs: number;
  secondMs: number;
  /** every run's spawn-to-ready, ms */
  readyRuns: number[];
}

export interface StartUpResult extends StartUpFigures {
  runs: number;
  /** the baseline build's figures, from the same interleaved runs */
  baseline?: StartUpFigures & { dist: string };
}

const POLL_MS = 5;

export async function measureStartUp(upstreamUrl: string, runs: number, baselineDist?: string): Promise<StartUpResult> {
  const builds = [undefined, ...(baselineDist === undefined ? [] : [baselineDist])];
  const samples = builds.map(() => ({ ready: [] as number[], cpu: [] as number[], first: [] as number[], firstCpu: [] as number[], second: [] as number[] }));
  for (let i = 0; i < runs; i++) {
    // each run in the other order: neither build always follows the other
    for (let j = 0; j < builds.length; j++) {
      const b = (i + j) % builds.length;
      const s = samples[b]!;
      const sluice = await startSluice(upstreamUrl, { pollMs: POLL_MS, dist: builds[b] });
      try {
        s.ready.push(sluice.readyMs);
        const readyCpuUs = await readCpuUs(sluice.pid);
        s.cpu.push(readyCpuUs / 1000);
        s.first.push(await timedChat(sluice.url));
        s.firstCpu.push(((await readCpuUs(sluice.pid)) - readyCpuUs) / 1000);
        s.second.push(await timedChat(sluice.url));
      } finally {
        await sluice.stop();
      }
    }
  }
  const figures = (s: (typeof samples)[number]): StartUpFigures => ({
    readyMs: median(s.ready),
    readyCpuMs: median(s.cpu),
    firstMs: median(s.first),
    firstCpuMs: median(s.firstCpu),
    secondMs: median(s.second),
    readyRuns: s.ready,
  });
  return { runs, ...figures(samples[0]!), ...(baselineDist === undefined ? {} : { baseline: { dist: baselineDist, ...figures(samples[1]!) } }) };
}

async function timedChat(url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(url + CHAT_PATH, { method: "POST", headers: CHAT_HEADERS, body: chatBody(false) });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`the chat request answered ${res.status}`);
  return performance.now() - started;
}
