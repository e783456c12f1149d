// The fleet section's shared-prefix workload (docs/routing.md#bench): many apps, each with a long
// system prompt and knowledge-base quotes that all its users share, and many short sessions — new
// users arrive at random (Poisson), each asks 1–3 questions — on replicas whose prefix caches hold
// fewer apps than there are. The same arrivals (per round) through the random floor, through Sluice
// routing by prefix (the default) and through Sluice with `affinity: "session"`, interleaved.
import { setTimeout as sleep } from "node:timers/promises";
import { KEY, MODEL, decisionsOf, figures, startFleetSluice, statsOf, words, type TargetFigures } from "./bench.js";
import { startRandomProxy } from "./random-proxy.js";
import { startReplicas, type Replica, type ReplicaStats } from "./replicas.js";

export interface SharedPrefixOptions {
  replicas: number;
  apps: number;
  /** new users a second */
  usersPerSecond: number;
  /** how long users keep arriving, per target and round */
  seconds: number;
  rounds: number;
  /** each replica's KV cache, in blocks of 16 tokens */
  cacheBlocks: number;
}

/** 10 apps of 20–30K characters (5–7.5K tokens: 4–6K words), caches of about 4 apps' prefixes. */
export const SHARED_PREFIX_DEFAULTS: SharedPrefixOptions = { replicas: 4, apps: 10, usersPerSecond: 2.8, seconds: 20, rounds: 2, cacheBlocks: 1700 };
const PREFIX_CHARS = [20_000, 25_000, 30_000];
const QUESTION_CHARS = 300;
const ANSWER_TOKENS = 8;
const THINK_MS = 300;

export type SharedTarget = "random" | "prefix" | "session";
export interface SharedPrefixResult {
  options: SharedPrefixOptions;
  figures: Record<SharedTarget, TargetFigures>;
}

/** A small seeded generator: every target of a round sees the same users. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

interface User {
  at: number;
  app: number;
  turns: number;
}

function usersOf(o: SharedPrefixOptions, round: number): User[] {
  const random = seeded(round + 1);
  const users: User[] = [];
  for (let at = 0; ; ) {
    at += (-Math.log(1 - random()) / o.usersPerSecond) * 1000;
    if (at >= o.seconds * 1000) return users;
    users.push({ at, app: Math.floor(random() * o.apps), turns: 1 + Math.floor(random() * 3) });
  }
}

/** One streamed turn: its TTFT, or undefined when it failed. */
async function ask(url: string, messages: Array<{ role: string; content: string }>): Promise<{ ttft?: number; answer: string }> {
  const started = performance.now();
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: MODEL, stream: true, max_tokens: ANSWER_TOKENS, messages }),
    });
    if (res.status !== 200 || !res.body) throw new Error(`status ${res.status}`);
    let ttft: number | undefined;
    let answer = "";
    const decoder = new TextDecoder();
    for await (const part of res.body) {
      const text = decoder.decode(part as Uint8Array, { stream: true });
      if (ttft === undefined && text.includes('"content"')) ttft = performance.now() - started;
      answer += text;
    }
    return { ttft, answer };
  } catch {
    return { answer: "" };
  }
}

/** Every user of the round, each arriving at its time, through `url`; the replicas' counters before and after. */
async function runUsers(url: string, replicas: Replica[], o: SharedPrefixOptions, round: number, label: string, into: { ttfts: number[]; stats: Array<[ReplicaStats[], ReplicaStats[]]>; failed: number }) {
  const before = await statsOf(replicas);
  // each run's own apps: no target finds what an earlier one left in the caches
  const prefixes = Array.from({ length: o.apps }, (_, a) => `You are the assistant of app ${a} (${label}). Answer from these quotes.\n${words(`app${a}-${label}-kb`, PREFIX_CHARS[a % PREFIX_CHARS.length]!)}`);
  const start = performance.now();
  await Promise.all(
    usersOf(o, round).map(async (user, u) => {
      await sleep(Math.max(0, user.at - (performance.now() - start)));
      const messages = [{ role: "system", content: prefixes[user.app]! }];
      for (let t = 0; t < user.turns; t++) {
        messages.push({ role: "user", content: `question ${t} of user ${u}: ${words(`u${u}-${t}`, QUESTION_CHARS)}` });
        const { ttft, answer } = await ask(url, messages);
        if (ttft === undefined) into.failed++;
        else into.ttfts.push(ttft);
        messages.push({ role: "assistant", content: `answer ${answer.length}` });
        await sleep(THINK_MS);
      }
    }),
  );
  into.stats.push([before, await statsOf(replicas)]);
}

export async function measureSharedPrefix(o: SharedPrefixOptions = SHARED_PREFIX_DEFAULTS): Promise<SharedPrefixResult> {
  const replicas = await startReplicas(o.replicas, { cacheBlocks: o.cacheBlocks });
  const floor = await startRandomProxy(replicas.map((r) => r.url));
  const byPrefix = await startFleetSluice(replicas);
  const bySession = await startFleetSluice(replicas, { affinity: "session" });
  const urls: Record<SharedTarget, string> = { random: floor.url, prefix: byPrefix.url, session: bySession.url };
  const acc = Object.fromEntries((["random", "prefix", "session"] as const).map((t) => [t, { ttfts: [] as number[], stats: [] as Array<[ReplicaStats[], ReplicaStats[]]>, failed: 0 }])) as Record<SharedTarget, { ttfts: number[]; stats: Array<[ReplicaStats[], ReplicaStats[]]>; failed: number }>;
  try {
    for (let round = 0; round < o.rounds; round++) {
      const order: SharedTarget[] = round % 2 === 0 ? ["random", "prefix", "session"] : ["session", "prefix", "random"];
      for (const target of order) {
        console.error(`fleet shared prefix: round ${round + 1}/${o.rounds}, ${target}`);
        await runUsers(urls[target], replicas, o, round, `${round}-${target}`, acc[target]);
      }
    }
    const out = Object.fromEntries((["random", "prefix", "session"] as const).map((t) => [t, figures(acc[t], replicas.length)])) as Record<SharedTarget, TargetFigures>;
    out.prefix.decisions = await decisionsOf(byPrefix.url);
    out.session.decisions = await decisionsOf(bySession.url);
    return { options: o, figures: out };
  } finally {
    await Promise.all([floor.close(), byPrefix.stop().then(() => byPrefix.cleanup()), bySession.stop().then(() => bySession.cleanup()), ...replicas.map((r) => r.stop())]);
  }
}

export function sharedPrefixLines(r: SharedPrefixResult): string[] {
  const o = r.options;
  const row = (name: string, f: TargetFigures) =>
    `  ${name.padEnd(22)} TTFT p50 ${f.ttftP50.toFixed(0)} ms, p95 ${f.ttftP95.toFixed(0)} ms; cache hit ${(f.cacheHitRatio * 100).toFixed(1)} %; requests per replica ${f.perReplica.join("/")}${f.decisions ? `; prefix/pinned/spilled/least loaded ${f.decisions}` : ""}${f.failed ? `; ${f.failed} failed` : ""}`;
  return [
    `fleet, shared prefixes: ${o.replicas} replicas of ${o.cacheBlocks} blocks, ${o.apps} apps, ${o.usersPerSecond} new users/s of 1-3 turns for ${o.seconds} s, ${o.rounds} interleaved rounds per target`,
    row("random", r.figures.random),
    row("Sluice, prefix", r.figures.prefix),
    row("Sluice, session", r.figures.session),
  ];
}

// `npx tsx bench/fleet/shared-prefix.ts [seconds rounds]` (after `npm run build`): the workload alone
if (import.meta.url === `file://${process.argv[1]}`) {
  const [seconds, rounds] = process.argv.slice(2).map(Number);
  measureSharedPrefix({ ...SHARED_PREFIX_DEFAULTS, seconds: seconds || SHARED_PREFIX_DEFAULTS.seconds, rounds: rounds || SHARED_PREFIX_DEFAULTS.rounds }).then(
    (r) => console.log(sharedPrefixLines(r).join("\n")),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
