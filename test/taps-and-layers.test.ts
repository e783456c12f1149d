// Rooms for cross-cutting work (docs/architecture.md#taps, #channel-layers): a tap registered with
// the gateway is told each metered request's fixed points — identified, routed, every attempt
// begun, queued and ended with its channel, the answer written, finished — on the request's own
// probe; a layer registered for every channel sets a header on every upstream attempt, derived from
// the tap's per-attempt state. (Before: no tap or layer could be registered; the Observer's
// upstreamAttempt/queueWait/routeDecision carried no request.)
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { MeteredRequest, Probe, Tap } from "../src/metered/taps.js";
import type { Layer } from "../src/upstream/layers.js";
import type { PostAttempt } from "../src/upstream/types.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startUpstream, type Upstream } from "./support/upstream.js";

const KEY = "sk-taps-and-layers-01";
let bad: Upstream;
let good: Upstream;
let gw: StartedGateway;
const events: string[][] = [];
const ids = new WeakMap<PostAttempt, string>();

const tap: Tap = {
  open(request: MeteredRequest): Probe {
    const seen: string[] = [];
    events.push(seen);
    return {
      identified: (r) => void seen.push(`identified ${r.caller.app.id} ${r.model.model} ${r === request}`),
      routed: (_model, decision) => void seen.push(`routed ${decision}`),
      attemptBegun: (a) => (ids.set(a, `${seen.length}-${a.index}`), void seen.push(`begun ${a.index} ${a.entry.config.name}`)),
      queued: (a) => void seen.push(`queued ${a.index}`),
      attemptEnded: (a, outcome) => void seen.push(`ended ${a.index} ${outcome}`),
      written: () => void (seen.at(-1) === "written" || seen.push("written")),
      finished: (_r, status) => void seen.push(`finished ${status}`),
      answered: (status) => void seen.push(`answered ${status}`),
    };
  },
};
const stamp: Layer = (next) => (req) => {
  const id = req.attempt && ids.get(req.attempt);
  if (id) req.headers = { ...req.headers, "x-attempt-id": id };
  return next(req);
};

beforeAll(async () => {
  [bad, good] = await Promise.all([startUpstream({ status: 503 }), startUpstream()]);
  const channel = (name: string, baseUrl: string) => ({ name, baseUrl, models: ["m"], healthCheck: { intervalMs: 0 } });
  gw = await startGateway(
    {
      channels: [channel("bad", bad.url), channel("good", good.url)],
      llmModels: [{ model: "m", maxContext: 4000, maxResponse: 500, charsPointsPrice: 1 }],
      routing: { maxAttempts: 2 },
      apps: [{ id: "a", model: "m", models: ["m"], logBodies: "all" }],
      apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY }],
    },
    { taps: [tap], layers: [() => stamp] },
  );
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([bad, good].map((u) => u?.close()));
});

describe("a tap and a channel layer", () => {
  it("see every attempt of a request that failed over, and stamp each upstream post", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const seen = events.at(-1)!;
    expect(seen[0]).toBe("identified a m true");
    const attempts = seen.filter((e) => e.startsWith("begun"));
    const ended = seen.filter((e) => e.startsWith("ended"));
    expect(ended).toHaveLength(attempts.length);
    expect(ended.at(-1)).toBe(`ended ${attempts.length} ok`);
    // each attempt that reached a channel waited in its queue (0 ms when a slot was free)
    expect(seen.filter((e) => e.startsWith("queued"))).toHaveLength(attempts.length);
    // the pipeline finishes, then (a whole answer is written by the route wrapper) the answer is on the wire
    await vi.waitFor(() => expect(seen.at(-1)).toBe("answered 200"));
    expect(seen).toContain("finished 200");
    expect(seen.indexOf("written")).toBeLessThan(seen.indexOf("answered 200"));
    // every upstream post carried the id the tap gave its attempt, through the layer
    const sent = [...bad.requests, ...good.requests].map((r) => r.headers["x-attempt-id"]);
    expect(sent.sort()).toEqual(attempts.map((_, i) => `${seen.indexOf(attempts[i]!)}-${i + 1}`).sort());
  });
});
