// When a request goes (docs/routing.md#priority-and-fairness): a channel with `concurrency` holds the queue
// in the gateway, served by priority, then round robin across apps (FIFO inside one), with aging so a low
// priority call is never starved; `forwardPriority` writes vLLM's `priority` into the upstream body; each
// call's wait is in sluice_queue_wait_seconds{channel, priority}. Over real sockets: a gateway in front of
// a scripted model server that holds the first call until the test lets it go.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Observer } from "../src/observability/observer.js";
import { silentObserver } from "../src/observability/observer.js";
import { withPriorityField } from "../src/upstream/forward-priority.js";
import { chat, userMessage } from "./support/core-config.js";
import { startGateway, type StartedGateway } from "./support/gateway.js";
import { startScriptedUpstream, textChunks, type ScriptedUpstream } from "./support/scripted-upstream.js";

const KEYS = {
  batch: "sk-sched-batch-0001",
  batch2: "sk-sched-batch-0002",
  interactive: "sk-sched-live-0001",
  other: "sk-sched-other-0001",
  urgent: "sk-sched-urgent-0001",
};

/** Apps: batch (priority 0, two keys), live (10), other (0); key `urgent` of batch has priority 5. */
function config(upstreamUrl: string, channel: Record<string, unknown> = {}, routing: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    channels: [{ name: "up", baseUrl: upstreamUrl, models: ["m1"], concurrency: 1, healthCheck: { intervalMs: 0 }, ...channel }],
    llmModels: [{ model: "m1", maxContext: 4000, maxResponse: 100 }],
    apps: [
      { id: "batch", model: "m1" },
      { id: "live", model: "m1", priority: 10 },
      { id: "other", model: "m1" },
    ],
    apiKeys: [
      { name: "batch", kind: "app", appId: "batch", key: KEYS.batch },
      { name: "batch2", kind: "app", appId: "batch", key: KEYS.batch2 },
      { name: "urgent", kind: "app", appId: "batch", key: KEYS.urgent, priority: 5 },
      { name: "live", kind: "app", appId: "live", key: KEYS.interactive },
      { name: "other", kind: "app", appId: "other", key: KEYS.other },
    ],
    shareLinks: [
      { shareId: "batch-public", appId: "batch", priority: 7 },
      { shareId: "live-public", appId: "live" },
    ],
    routing,
  };
}

interface Rig {
  gw: StartedGateway;
  upstream: ScriptedUpstream;
  /** the calls' markers in the order the model server received them */
  arrived: string[];
  /** the gateway's queue depth on the channel, as last reported */
  depth(): number;
  /** lets the first call (the one holding the only slot) answer */
  releaseFirst(): void;
}

const rigs: Rig[] = [];
afterEach(async () => {
  for (const rig of rigs.splice(0)) {
    rig.releaseFirst();
    await rig.gw.close();
    await rig.upstream.close();
  }
});

/** A model server that answers at once, except the first call, held until releaseFirst(). */
async function rig(channel: Record<string, unknown> = {}, routing: Record<string, unknown> = {}, onArrive?: (marker: string) => void): Promise<Rig> {
  let releaseFirst = () => {};
  const held = new Promise<void>((resolve) => (releaseFirst = resolve));
  const arrived: string[] = [];
  const upstream = await startScriptedUpstream(async (req, n) => {
    const marker = String(req.body.messages.at(-1)?.content);
    arrived.push(marker);
    onArrive?.(marker);
    if (n === 0) await held;
    return { chunks: textChunks("ok", 1), finishReason: "stop", usage: { prompt_tokens: 3, completion_tokens: 1 } };
  });
  let depth = 0;
  const observer: Observer = { ...silentObserver, channelQueue: (_c, d) => void (depth = d) };
  const gw = await startGateway(config(upstream.url, channel, routing), { observerExtra: observer });
  const r: Rig = { gw, upstream, arrived, depth: () => depth, releaseFirst };
  rigs.push(r);
  return r;
}

const ask = (r: Rig, key: string, marker: string) =>
  chat(r.gw.url, { model: "m1", messages: [userMessage(marker)] }, key).then(async (res) => {
    expect(res.status, await res.clone().text()).toBe(200);
    await res.text();
  });

/** A share-link user's call: `key` is `share:<shareId>`. */
const askAs = (r: Rig, key: string, marker: string) =>
  key.startsWith("share:")
    ? fetch(`${r.gw.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ shareId: key.slice(6), outLinkUid: `user-${marker}`, messages: [userMessage(marker)] }),
      }).then(async (res) => {
        expect(res.status, await res.clone().text()).toBe(200);
        await res.text();
      })
    : ask(r, key, marker);

/** The first call takes the only slot; `queued` are sent one after another, each waiting in the
 *  queue before the next is sent (their arrival order is known); then the first is let go. */
async function queueBehindFirst(r: Rig, queued: Array<[key: string, marker: string]>): Promise<void> {
  const calls = [ask(r, KEYS.batch, "first")];
  await vi.waitFor(() => expect(r.arrived).toEqual(["first"]), { timeout: 5_000, interval: 5 });
  for (const [i, [key, marker]] of queued.entries()) {
    calls.push(askAs(r, key, marker));
    await vi.waitFor(() => expect(r.depth()).toBe(i + 1), { timeout: 5_000, interval: 2 });
  }
  r.releaseFirst();
  await Promise.all(calls);
}

describe("the gateway's queue on a channel with concurrency", () => {
  it("serves waiting calls by priority: the app's, or the key's own; FIFO within one priority and app", async () => {
    const r = await rig();
    await queueBehindFirst(r, [
      [KEYS.batch, "b1"],
      [KEYS.batch, "b2"],
      [KEYS.interactive, "live1"],
      [KEYS.urgent, "urgent1"],
      [KEYS.batch, "b3"],
      [KEYS.interactive, "live2"],
    ]);
    expect(r.arrived).toEqual(["first", "live1", "live2", "urgent1", "b1", "b2", "b3"]);
  });

  it("gives a share link's users the link's priority, or its app's when it has none", async () => {
    const r = await rig();
    await queueBehindFirst(r, [
      [KEYS.batch, "b1"],
      [KEYS.urgent, "urgent1"],
      ["share:batch-public", "link7"],
      ["share:live-public", "link10"],
    ]);
    expect(r.arrived).toEqual(["first", "link10", "link7", "urgent1", "b1"]);
  });

  it("is fair across apps of one priority: an app's one call is not served behind another app's many", async () => {
    const r = await rig();
    const flood = Array.from({ length: 8 }, (_, i): [string, string] => [i % 2 ? KEYS.batch2 : KEYS.batch, `b${i}`]);
    await queueBehindFirst(r, [...flood, [KEYS.other, "o1"], [KEYS.other, "o2"]]);
    // round robin: the other app first (the batch app was just served), then turn about while both wait
    expect(r.arrived.slice(0, 5)).toEqual(["first", "o1", "b0", "o2", "b1"]);
    // inside the batch app, FIFO across its keys
    expect(r.arrived.filter((m) => m.startsWith("b"))).toEqual(flood.map(([, m]) => m));
  });

  it("ages waiting calls: a low priority call is served under a flood of high priority calls that never stops", async () => {
    // the flood keeps three calls of priority 10 waiting; the low call gains one priority per 20 ms
    const limit = 2_000;
    let sent = 0;
    const flood: Array<Promise<void>> = [];
    let r: Rig | undefined;
    const more = () => {
      if (r && sent < limit && !r.arrived.includes("low")) flood.push(ask(r, KEYS.interactive, `live${sent++}`));
    };
    r = await rig({}, { agingMs: 20 }, (marker) => marker.startsWith("live") && more());
    const first = ask(r, KEYS.batch, "first");
    await vi.waitFor(() => expect(r.arrived).toEqual(["first"]), { timeout: 5_000, interval: 5 });
    for (let i = 0; i < 3; i++) more();
    await vi.waitFor(() => expect(r.depth()).toBe(3), { timeout: 5_000, interval: 2 });
    const low = ask(r, KEYS.other, "low");
    await vi.waitFor(() => expect(r.depth()).toBe(4), { timeout: 5_000, interval: 2 });
    r.releaseFirst();
    await low;
    await first;
    await Promise.all(flood);
    // served while the flood still had calls waiting, long before it would have ended
    expect(sent).toBeLessThan(limit);
  });
});

describe("forwardPriority", () => {
  it("writes the caller's configured priority into the body as vLLM's priority (negated, 0 included); none without the flag", async () => {
    const r = await rig({ forwardPriority: true, concurrency: 0 });
    r.releaseFirst();
    await ask(r, KEYS.urgent, "a");
    await ask(r, KEYS.batch, "b");
    await ask(r, KEYS.interactive, "c");
    expect(r.upstream.requests.map((q) => q.body.priority)).toEqual([-5, 0, -10]);

    const plain = await rig({ concurrency: 0 });
    plain.releaseFirst();
    await ask(plain, KEYS.urgent, "d");
    expect(plain.upstream.requests[0]!.body).not.toHaveProperty("priority");
  });

  it("keeps the gateway's priority over one the client passed through", async () => {
    const r = await rig({ forwardPriority: true, concurrency: 0 });
    await r.gw.close();
    rigs.pop();
    const raw = config(r.upstream.url, { forwardPriority: true, concurrency: 0 });
    (raw.llmModels as Array<Record<string, unknown>>)[0]!.passThrough = ["priority"];
    const gw = await startGateway(raw);
    rigs.push({ ...r, gw });
    r.releaseFirst();
    const res = await chat(gw.url, { model: "m1", messages: [userMessage("x")], priority: -100 }, KEYS.interactive);
    expect(res.status).toBe(200);
    await res.text();
    expect(r.upstream.requests.at(-1)!.body.priority).toBe(-10);
  });
});

describe("the priority member written into a kind's JSON body", () => {
  it("goes last in the object, after any other member, and keeps the body's kind (string or bytes)", () => {
    expect(withPriorityField('{"model":"m1","priority":7}', -3)).toBe('{"model":"m1","priority":7,"priority":-3}');
    expect(JSON.parse(withPriorityField('{"model":"m1","priority":7}', -3) as string)).toEqual({ model: "m1", priority: -3 });
    expect(withPriorityField("{}", 0)).toBe('{"priority":0}');
    expect(withPriorityField(' { "a" : [1,{}] } \n', -0)).toBe(' { "a" : [1,{}] ,"priority":0} \n');
    const bytes = withPriorityField(Buffer.from('{"text":"é"}'), 4);
    expect(Buffer.isBuffer(bytes) && bytes.toString("utf8")).toBe('{"text":"é","priority":4}');
    // not one JSON object: sent as it is
    expect(withPriorityField("[1,2]", 1)).toBe("[1,2]");
  });
});

describe("sluice_queue_wait_seconds", () => {
  it("counts each call's wait by channel and the caller's configured priority", async () => {
    const r = await rig();
    await queueBehindFirst(r, [
      [KEYS.interactive, "live1"],
      [KEYS.urgent, "urgent1"],
      [KEYS.batch, "b1"],
    ]);
    const metrics = await fetch(`${r.gw.url}/metrics`).then((res) => res.text());
    const count = (priority: number) => Number(new RegExp(`sluice_queue_wait_seconds_count\\{channel="up",priority="${priority}"\\} (\\d+)`).exec(metrics)?.[1]);
    expect([count(10), count(5), count(0)]).toEqual([1, 1, 2]);
    // the calls that queued waited for the first one: not in the zero bucket
    expect(metrics).toMatch(/sluice_queue_wait_seconds_bucket\{le="0.001",channel="up",priority="10"\} 0/);
  });
});
