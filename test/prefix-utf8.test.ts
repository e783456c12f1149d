// Routing by prefix (docs/routing.md#prefix) of a prompt in a script of multi-byte characters: where
// a prompt's UTF-8 is not a whole number of chunks, the last chunk it is cut to may end inside a
// character of its last text; that chunk is hashed from the bytes written and zeros, never from
// memory left as it was found — so sessions sending one Chinese prompt gather on one replica.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { MODEL, fleetConfig, post, replicaOf, startReplicas } from "./support/replica-fleet.js";
import type { Upstream } from "./support/upstream.js";

let replicas: Upstream[];
let gw: StartedGateway | undefined;
beforeAll(async () => {
  replicas = await startReplicas();
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  for (const r of replicas) r.reset();
});
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.close()));
});

/** 2 + 400 × 3 bytes of UTF-8: after the model and the role marker (9 bytes) the prefix's one whole
 *  chunk (1024 bytes) ends 2 bytes into its 338th character */
const PROMPT = `AB${"请总结下面的文件内容".repeat(40)}`;
/** another app's prompt, of the same length, sent between them */
const OTHER = `BA${"你是本应用的中文助手".repeat(40)}`;
const ask = (url: string, content: string, session: string) => () =>
  post(url, "/v1/chat/completions", { model: MODEL, messages: [{ role: "user", content }] }, { "x-session-id": session });

describe("routing by prefix, a prompt of multi-byte characters", () => {
  it("new sessions sending one Chinese prompt land on the replica that holds it", async () => {
    // before: the chunk's last 2 bytes were what Buffer.allocUnsafeSlow found there (the other
    // prompt's, as the two took turns), so its hash changed from request to request: no session
    // matched, and the prompt's 12 sessions spread over 2 replicas (3 runs of 3)
    gw = await startGateway(fleetConfig(replicas));
    const homes = new Set<number>();
    for (let s = 0; s < 12; s++) {
      homes.add(await replicaOf(replicas, ask(gw.url, PROMPT, `a-${s}`)));
      await replicaOf(replicas, ask(gw.url, OTHER, `b-${s}`));
    }
    expect(homes.size).toBe(1);
  });
});
