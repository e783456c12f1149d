// Many streams held open at once: opens `count` streaming requests, waits until every one has
// received its first bytes, runs `during` (e.g. reading memory), then cuts them all.
import { Pool } from "undici";
import { CHAT_HEADERS, CHAT_PATH } from "./chat-request.js";

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
