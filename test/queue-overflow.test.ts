// A full queue (docs/routing.md#priority-and-fairness): an arrival that outranks the queue's weakest
// waiter — a higher effective priority, or the same one and an app with fewer waiters — queues, and
// the weakest (the newest call of the app with the most waiters, lowest priority first) is refused
// 503 channel_busy in its place, its budget hold and concurrency slot freed as for any refused call.
// Over real sockets: a gateway in front of a scripted model server that holds every call until the
// test lets go, with a spy on the cluster state that sums the holds and slots taken and given back;
// and the gate's choice itself, driven directly.
import { afterEach, describe, expect, it, vi } from "vitest";
import { createMemoryClusterState } from "../src/cluster/memory.js";
import type { ClusterState } from "../src/cluster/types.js";
import { silentObserver, type Observer } from "../src/observability/observer.js";
import { ConnectionGate, GateRefused } from "../src/upstream/gate.js";
import { chat, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startScriptedUpstream, textChunks, type ScriptedUpstream } from "./support/scripted-upstream.js";

const LO = "sk-overflow-lo-0001";
const HI = "sk-overflow-hi-0001";

/** Apps: lo (priority -10, a budget and a cap on calls in flight), hi (10), peer (-10, a share link). */
function config(upstreamUrl: string): Record<string, unknown> {
  return {
    channels: [{ name: "up", baseUrl: upstreamUrl, models: ["m1"], concurrency: 2, maxQueue: 20, healthCheck: { intervalMs: 0 } }],
    llmModels: [{ model: "m1", maxContext: 4000, maxResponse: 100, charsPointsPrice: 2 }],
    apps: [
      { id: "lo", model: "m1", priority: -10, maxUsagePoints: 1000, maxConcurrent: 100 },
      { id: "hi", model: "m1", priority: 10 },
      { id: "peer", model: "m1", priority: -10 },
    ],
    apiKeys: [
      { name: "lo", kind: "app", appId: "lo", key: LO },
      { name: "hi", kind: "app", appId: "hi", key: HI },
    ],
    shareLinks: [{ shareId: "peer-public", appId: "peer" }],
    // no aging while the test runs: the order is priority and fairness alone
    routing: { agingMs: 600_000 },
  };
}

/** The memory state, counting what app lo holds and takes and what it gives back. */
function spiedState(): { state: ClusterState; lo: { held: number; settled: number; slots: number; freed: number } } {
  const inner = createMemoryClusterState({ failures: 5, cooldownMs: 30_000 });
  const lo = { held: 0, settled: 0, slots: 0, freed: 0 };
  const state: ClusterState = {
    ...inner,
    async admit(holds, points, rates, now, spent) {
      const result = await inner.admit(holds, points, rates, now, spent);
      if (result.ok && holds.some((h) => h.scope === "app:lo")) lo.held += result.held;
      return result;
    },
    settle(scopes, held, actual, tokens) {
      if (scopes.includes("app:lo")) lo.settled += held;
      return inner.settle(scopes, held, actual, tokens);
    },
    async takeSlots(limits, id, now) {
      const result = await inner.takeSlots(limits, id, now);
      if (result.ok && limits.some((l) => l.scope === "app:lo")) lo.slots++;
      return result;
    },
    freeSlots(scopes, id) {
      if (scopes.includes("app:lo")) lo.freed++;
      return inner.freeSlots(scopes, id);
    },
  };
  return { state, lo };
}

interface Outcome {
  status: number;
  code?: string;
  retryAfter: string | null;
}

const outcome = async (res: Response): Promise<Outcome> => {
  const body = (await res.json()) as { error?: { code?: string } };
  return { status: res.status, code: body.error?.code, retryAfter: res.headers.get("retry-after") };
};

let gw: StartedGateway | undefined;
let upstream: ScriptedUpstream | undefined;
let release = () => {};
afterEach(async () => {
  release();
  await gw?.close();
  await upstream?.close();
  gw = upstream = undefined;
});

describe("a full queue on a channel with concurrency", () => {
  it("lets in a call of higher priority, or of an app with fewer waiters, refusing the flooding app's newest waiter instead", async () => {
    const held = new Promise<void>((resolve) => (release = resolve));
    const arrived: string[] = [];
    upstream = await startScriptedUpstream(async (req) => {
      arrived.push(String(req.body.messages.at(-1)?.content));
      await held;
      return { chunks: textChunks("ok", 1), finishReason: "stop", usage: { prompt_tokens: 5, completion_tokens: 1 } };
    });
    let depth = 0;
    const observer: Observer = { ...silentObserver, channelQueue: (_c, d) => void (depth = d) };
    const { state, lo } = spiedState();
    gw = await startGateway(config(upstream.url), { observerExtra: observer, state });
    const url = gw.url;

    // app lo floods the channel: 2 in flight, 20 waiting (the queue full), 8 refused
    const loDone: Outcome[] = [];
    const loCalls = Array.from({ length: 30 }, (_, i) => chat(url, { model: "m1", messages: [userMessage(`lo${i}`)] }, LO).then(outcome));
    for (const call of loCalls) void call.then((o) => loDone.push(o));
    await vi.waitFor(() => expect([arrived.length, depth, loDone.length]).toEqual([2, 20, 8]), { timeout: 10_000, interval: 5 });

    // app hi's one call queues, lo's newest waiter is refused instead (before: hi's call itself was
    // answered first, at once: { status: 503, code: "channel_busy" }, and lo kept its 20 waiters)
    const hiCall = chat(url, { model: "m1", messages: [userMessage("hi")] }, HI).then(outcome);
    const evicted = vi.waitFor(() => expect(loDone.length).toBe(9), { timeout: 5_000, interval: 5 });
    expect(await Promise.race([hiCall, evicted.then(() => "lo's newest refused")])).toBe("lo's newest refused");
    expect(depth).toBe(20);
    // a share link's visitor of the same priority as lo, its app with no waiter: in too (before: 503)
    const peerCall = fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ shareId: "peer-public", outLinkUid: "visitor", messages: [userMessage("peer")] }),
    }).then(outcome);
    await vi.waitFor(() => expect([loDone.length, depth]).toEqual([10, 20]), { timeout: 5_000, interval: 5 });
    // lo itself gains nothing by sending more: its own arrival is refused, no waiter of its own evicted
    const more = await chat(url, { model: "m1", messages: [userMessage("lo-more")] }, LO).then(outcome);
    expect(more).toMatchObject({ status: 503, code: "channel_busy" });
    expect(depth).toBe(20);

    release();
    expect(await hiCall).toMatchObject({ status: 200 });
    expect(await peerCall).toMatchObject({ status: 200 });
    const los = await Promise.all(loCalls);
    expect(los.filter((o) => o.status === 200)).toHaveLength(20);
    const refused = los.filter((o) => o.status !== 200);
    expect(refused).toHaveLength(10);
    for (const o of refused) expect(o).toEqual({ status: 503, code: "channel_busy", retryAfter: "1" });
    // hi first by priority, then the visitor: its app served least recently
    expect(arrived.slice(2, 4)).toEqual(["hi", "peer"]);

    // nothing leaks: every hold settled, every slot freed, lo billed for its 20 answers alone
    await vi.waitFor(
      () => {
        expect(lo.freed).toBe(lo.slots);
        expect(lo.settled).toBeCloseTo(lo.held, 9);
      },
      { timeout: 5_000, interval: 5 },
    );
    expect(lo.held).toBeGreaterThan(0);
    expect(lo.slots).toBe(31);
    const spent = await gw.store.getSpent("app:lo");
    // and a later call of lo is served, billed as each of its 20 answers was
    expect(await chat(url, { model: "m1", messages: [userMessage("lo-later")] }, LO).then(outcome)).toMatchObject({ status: 200 });
    const each = (await gw.store.getSpent("app:lo")) - spent;
    expect(each).toBeGreaterThan(0);
    expect(spent).toBeCloseTo(20 * each, 9);
  });
});

describe("the gate's choice at a full queue", () => {
  const refusal = (p: Promise<unknown>) => p.then(() => "granted", (err: GateRefused) => err.reason);

  it("refuses the newest waiter of the app with the most waiters, lowest priority first; never for a weaker arrival", async () => {
    const gate = new ConnectionGate({ connections: 1, maxQueue: 3, queueTimeoutMs: 60_000 });
    const first = await gate.acquire(undefined, { app: "a" });
    const served: string[] = [];
    const wait = (name: string, app: string, priority = 0) => {
      const p = gate.acquire(undefined, { app, priority });
      void p.then((release) => (served.push(name), release()), () => {});
      return refusal(p);
    };
    const a1 = wait("a1", "a");
    const a2 = wait("a2", "a");
    const b1 = wait("b1", "b");
    // c: the same priority, an app with no waiter: a (two waiters) gives up its newest
    const c1 = wait("c1", "c");
    expect(await a2).toBe("busy");
    // every app has one waiter: an arrival of the same priority gains nothing; a lower one neither
    expect(await wait("d1", "d")).toBe("busy");
    expect(await wait("e1", "e", -1)).toBe("busy");
    // a higher priority gets in, even of an app already waiting: the newest of the weakest goes
    const f1 = wait("f1", "a", 5);
    expect(await c1).toBe("busy");
    expect(gate.queued).toBe(3);
    first();
    expect(await Promise.all([a1, b1, f1])).toEqual(["granted", "granted", "granted"]);
    expect(served).toEqual(["f1", "b1", "a1"]);
  });
});
