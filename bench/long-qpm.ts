// The budgeted+QPM case (issue "Performance"): the non-stream load held for minutes on an app and a
// key of their own, both with a budget and a QPM limit, in back-to-back 10 s slices. A rate window
// whose cost grows with the requests it holds shows as CPU per request rising once the window is
// full (after its first minute); the check compares minute 2 with the first 10 s.
import { CONNECTIONS, runLoad, type LoadResult } from "./autocannon-case.js";
import { CHAT_HEADERS, CHAT_PATH, chatBody, headersFor } from "./chat-request.js";
import { METERED_KEY } from "./sluice-process.js";

export const SLICE_SECONDS = 10;

export interface QpmResult {
  seconds: number;
  slices: LoadResult[];
  firstCpuUs?: number;
  /** mean CPU per request of the slices from 60 s on */
  minute2CpuUs?: number;
}

export async function measureLongQpm(origin: string, pids: { target: number; upstream: number }, seconds: number, warmupSeconds: number): Promise<QpmResult> {
  const body = chatBody(false);
  const spec = { origin, path: CHAT_PATH, headers: headersFor(METERED_KEY), body: () => body, connections: CONNECTIONS };
  // a warm process (JIT, pools) with the other key, so the first slice differs only by its window
  await runLoad({ ...spec, headers: CHAT_HEADERS }, warmupSeconds);
  const slices: LoadResult[] = [];
  for (let start = 0; start < seconds; start += SLICE_SECONDS) {
    const slice = await runLoad(spec, Math.min(SLICE_SECONDS, seconds - start), pids);
    console.error(`qpm: ${start}-${Math.round(start + slice.seconds)} s: ${slice.rps.toFixed(0)} RPS, ${slice.cpuUs?.toFixed(0)} us/req`);
    slices.push(slice);
  }
  const later = slices.filter((_, i) => i * SLICE_SECONDS >= 60);
  const answered = later.reduce((n, s) => n + s.answered, 0);
  const minute2 = later.every((s) => s.cpuUs !== undefined) && answered > 0 ? later.reduce((n, s) => n + s.cpuUs! * s.answered, 0) / answered : undefined;
  return { seconds, slices, firstCpuUs: slices[0]?.cpuUs, minute2CpuUs: minute2 };
}
