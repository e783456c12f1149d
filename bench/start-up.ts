// The start-up section (docs/performance.md#sections): fresh Sluices spawned as `npm start` runs
// them, each timed from the spawn to its first /healthz 200 (polled every few ms) — in wall time,
// and in the CPU the process used by then, which other work on the machine moves far less — then
// its first and second chat request's latency: what a gateway that restarts under a supervisor,
// or scales out, costs before and just after it is ready.
import { median } from "./autocannon-case.js";
import { CHAT_HEADERS, CHAT_PATH, chatBody } from "./chat-request.js";
import { readCpuUs } from "./process-cpu.js";
import { startSluice } from "./sluice-process.js";

export interface StartUpResult {
  runs: number;
  /** medians, ms */
  readyMs: number;
  /** the CPU the process used until it was ready */
  readyCpuMs: number;
  firstMs: number;
  secondMs: number;
  /** every run's spawn-to-ready, ms */
  readyRuns: number[];
}

const POLL_MS = 5;

export async function measureStartUp(upstreamUrl: string, runs: number): Promise<StartUpResult> {
  const ready: number[] = [];
  const cpu: number[] = [];
  const first: number[] = [];
  const second: number[] = [];
  for (let i = 0; i < runs; i++) {
    const sluice = await startSluice(upstreamUrl, { pollMs: POLL_MS });
    try {
      ready.push(sluice.readyMs);
      cpu.push((await readCpuUs(sluice.pid)) / 1000);
      first.push(await timedChat(sluice.url));
      second.push(await timedChat(sluice.url));
    } finally {
      await sluice.stop();
    }
  }
  return { runs, readyMs: median(ready), readyCpuMs: median(cpu), firstMs: median(first), secondMs: median(second), readyRuns: ready };
}

async function timedChat(url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(url + CHAT_PATH, { method: "POST", headers: CHAT_HEADERS, body: chatBody(false) });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`the chat request answered ${res.status}`);
  return performance.now() - started;
}
