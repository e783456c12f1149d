// Many streams held open at once: opens `count` streaming requests, waits until every one has
// received its first bytes, runs `during` (e.g. reading memory), then cuts them all.
import { Pool } from "undici";
import { CHAT_HEADERS, CHAT_PATH, chatBody } from "./chat-request.js";
import { MODELS } from "./models.js";
import { readRssMb } from "./node-process.js";

export async function withOpenStreams<T>(origin: string, body: string, count: number, during: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const pool = new Pool(origin, { connections: count, headersTimeout: 0, bodyTimeout: 0, connect: { timeout: timeoutMs } });
  let started = 0;
  const allStarted = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${started} of ${count} streams started within ${timeoutMs / 1000} s`)), timeoutMs);
    const fail = (err: unknown) => {
      clearTimeout(timer);
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    for (let i = 0; i < count; i++) {
      const opened = pool.request({ method: "POST", path: CHAT_PATH, headers: CHAT_HEADERS, body });
      opened.then(async (res) => {
        if (res.statusCode !== 200) return fail(new Error(`a stream answered ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`));
        res.body.on("error", () => {}); // destroying the pool ends every body with an error
        res.body.once("data", () => {
          if (++started < count) return;
          clearTimeout(timer);
          resolve();
        });
        res.body.resume();
      }).catch(fail);
    }
  });
  try {
    await allStarted;
    return await during();
  } finally {
    await pool.destroy();
  }
}

export interface MemoryResult {
  target: "floor" | "sluice";
  streams: number;
  idleMb?: number;
  openMb?: number;
  error?: string;
}

/** RSS of each target with `count` streams open on the held model, for each count in turn. */
export async function measureMemory(targets: Array<{ target: "floor" | "sluice"; origin: string; pid: number }>, counts: number[]): Promise<MemoryResult[]> {
  const body = chatBody(true, { model: MODELS.hold });
  const results: MemoryResult[] = [];
  for (const streams of counts) {
    for (const { target, origin, pid } of targets) {
      console.error(`memory: ${streams} open streams through ${target}`);
      try {
        const idleMb = await readRssMb(pid);
        const openMb = await withOpenStreams(origin, body, streams, () => readRssMb(pid));
        results.push({ target, streams, idleMb, openMb });
      } catch (err) {
        results.push({ target, streams, error: err instanceof Error ? err.message : String(err) });
      }
    }
  }
  return results;
}
