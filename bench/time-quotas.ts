// What quotas by time add to a request's CPU (docs/performance.md#quotas-by-time): `tsx bench/time-quotas.ts`.
// Two measures, each interleaving A (today's budgets: maxUsagePoints and qpm on the app and the key)
// and B (the same plus tpm and periodPoints on both), several rounds, the median kept:
//   1. admission alone: precheck, admit and settle through the quota on the in-process state;
//   2. whole chats through two in-process gateways (echo channel, SQLite in memory) on real sockets,
//      slices of chats alternating between A and B: the process's CPU per request (the load
//      generator's included: the same in A and B), the median of the slices' B/A ratios.
import { performance } from "node:perf_hooks";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "h3/node";
import { Pool } from "undici";
import { createMemoryClusterState } from "../src/cluster/memory.js";
import { parseConfig } from "../src/config/load.js";
import { createGateway } from "../src/gateway.js";
import { createHttpServer } from "../src/http/server.js";
import { createQuota, type QuotaLimit } from "../src/metered/quota.js";
import { periodSpan } from "../src/time/periods.js";
import { silentObserver } from "../src/observability/observer.js";
import { createStore } from "../src/store/index.js";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const ADMISSIONS = 20_000;
const CHATS = 15_000;
const CONCURRENCY = 16;
const KEY = "sk-bench-time-quotas-1";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function admission(withTime: boolean): Promise<number> {
  const store = createStore({ driver: "memory" });
  const state = createMemoryClusterState(() => ({ failures: 5, cooldownMs: 30_000, maxCooldownMs: 300_000 }));
  const quota = createQuota(store, state, silentObserver);
  const now = Date.now();
  const span = periodSpan(now, "day", "Europe/Berlin");
  const limits: QuotaLimit[] = [
    { scope: "app:a", label: "App a", maxUsagePoints: 1e12, qpm: 1e9, tpm: withTime ? 1e12 : 0 },
    { scope: "key:k", label: "API key k", maxUsagePoints: 1e12, qpm: 1e9, tpm: withTime ? 1e12 : 0 },
    ...(withTime
      ? [
          { scope: `app:a@day:${span.label}`, label: "App a", maxUsagePoints: 1e12, qpm: 0, period: { name: "day" as const, resetsAt: span.end } },
          { scope: `key:k@day:${span.label}`, label: "API key k", maxUsagePoints: 1e12, qpm: 0, period: { name: "day" as const, resetsAt: span.end } },
        ]
      : []),
  ];
  const worstCase = { bound: 2, least: 0.002, tokens: { bound: 1010, least: 11 }, counted: async () => ({ most: 2, least: 0.002, tokens: { most: 1010, least: 11 } }) };
  const start = cpuUs();
  for (let i = 0; i < ADMISSIONS; i++) {
    await quota.precheck(limits, 0.002, now + i);
    const r = await quota.admit(limits, worstCase, now + i, { ratesCounted: true });
    r.settle(1, 500);
  }
  const us = (cpuUs() - start) / ADMISSIONS;
  await state.close();
  await store.close();
  return us;
}

/** A gateway on a real socket with today's budgets, or with tpm and a day's points too. */
async function startChats(withTime: boolean) {
  const time = withTime ? { tpm: 1e12, periodPoints: 1e12, period: "day" } : {};
  const config = parseConfig({
    server: { log: { level: "silent" }, timezone: "Europe/Berlin" },
    store: { driver: "memory" },
    channels: [{ name: "echo", type: "echo", models: ["m"] }],
    llmModels: [{ model: "m", charsPointsPrice: 2 }],
    apps: [{ id: "a", model: "m", maxUsagePoints: 1e12, qpm: 1e9, ...time }],
    apiKeys: [{ name: "k", kind: "app", appId: "a", key: KEY, maxUsagePoints: 1e12, qpm: 1e9, ...time }],
  });
  const store = createStore(config.store);
  const gateway = createGateway(config, { store });
  const server = createHttpServer(toNodeHandler(gateway.app), config.server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: CONCURRENCY });
  const body = JSON.stringify({ model: "m", max_tokens: 64, messages: [{ role: "user", content: "How many tokens does this take?" }] });
  const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
  const one = async () => {
    const res = await pool.request({ method: "POST", path: "/v1/chat/completions", headers, body });
    await res.body.dump();
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
  };
  return {
    /** CPU µs per chat of `count` chats, CONCURRENCY at a time */
    async run(count: number): Promise<number> {
      let next = 0;
      const start = cpuUs();
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => { while (next++ < count) await one(); }));
      return (cpuUs() - start) / count;
    },
    async close() {
      await pool.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await gateway.close();
      await store.close();
    },
  };
}

/** Both gateways side by side, slices of chats alternating between them (the machine's speed drifts
 *  less within a slice pair than across runs): the median of the slices' B/A ratios. */
async function chats(): Promise<void> {
  const [a, b] = [await startChats(false), await startChats(true)];
  await a.run(500);
  await b.run(500); // warm-up
  const ratios: number[] = [];
  const [as, bs]: [number[], number[]] = [[], []];
  const t0 = performance.now();
  for (let r = 0; r < ROUNDS * 4; r++) {
    // alternate which goes first
    const [x, y] = r % 2 ? [await b.run(CHATS / 10), await a.run(CHATS / 10)].reverse() : [await a.run(CHATS / 10), await b.run(CHATS / 10)];
    as.push(x!);
    bs.push(y!);
    ratios.push(y! / x!);
  }
  await a.close();
  await b.close();
  const m = median(ratios);
  console.log(`whole chats (in-process gateway + load generator), ${ratios.length} slice pairs of ${CHATS / 10}: today's budgets ${median(as).toFixed(1)} µs/request, + tpm and period budgets ${median(bs).toFixed(1)} µs/request`);
  console.log(`  median B/A ${m.toFixed(3)} (${((m - 1) * 100).toFixed(1)} %); quartiles ${[...ratios].sort((p, q) => p - q)[Math.floor(ratios.length / 4)]!.toFixed(3)}–${[...ratios].sort((p, q) => p - q)[Math.floor((3 * ratios.length) / 4)]!.toFixed(3)} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
}

async function compare(name: string, measure: (withTime: boolean) => Promise<number>): Promise<void> {
  const a: number[] = [];
  const b: number[] = [];
  const t0 = performance.now();
  // a pair first, unmeasured: the JIT warms up on both paths
  await measure(false);
  await measure(true);
  for (let r = 0; r < ROUNDS; r++) {
    a.push(await measure(false));
    b.push(await measure(true));
  }
  const [ma, mb] = [median(a), median(b)];
  console.log(`${name}: today's budgets ${ma.toFixed(2)} µs/request, + tpm and period budgets ${mb.toFixed(2)} µs/request`);
  console.log(`  added ${(mb - ma).toFixed(2)} µs (${(((mb - ma) / ma) * 100).toFixed(1)} %); rounds A ${a.map((x) => x.toFixed(1)).join(" ")} | B ${b.map((x) => x.toFixed(1)).join(" ")} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
}

const only = process.argv[2];
// `profile-a` / `profile-b`: one configuration's chats only (run under --cpu-prof)
if (only?.startsWith("profile-")) {
  const g = await startChats(only === "profile-b");
  for (let i = 0; i < 4; i++) await g.run(CHATS);
  await g.close();
  process.exit(0);
}
if (only !== "chats") await compare("admission alone (precheck + admit + settle)", admission);
if (only !== "admission") await chats();
