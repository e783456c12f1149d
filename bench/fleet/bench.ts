// The bench's `fleet` section (docs/routing.md#bench): N simulated vLLM replicas (bench/fleet/replica.ts,
// each its own process) behind a random-routing floor and behind Sluice, in interleaved rounds.
// Agent-like sessions run at once: each agent type has a system prompt its sessions share, each
// session its own task, then turns that resend the growing history (the answer and a tool result
// appended each turn). Measured per target: TTFT p50/p95 (to the first content chunk), the replicas'
// token cache hit ratio and requests per replica; then again with one replica slowed.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { spawnNodeServer, type NodeServer } from "../node-process.js";
import { startRandomProxy } from "./random-proxy.js";
import { startReplicas, type Replica, type ReplicaStats } from "./replicas.js";

export const KEY = "sk-fleet-bench-key-0001";
export const MODEL = "sim";

export interface FleetOptions {
  replicas: number;
  agents: number;
  sessions: number;
  turns: number;
  rounds: number;
  /** the slowed replica's factor */
  slow: number;
  /** session s starts s × this many ms after the first (0: all at once) */
  staggerMs?: number;
}

export const FLEET_DEFAULTS: FleetOptions = { replicas: 4, agents: 4, sessions: 8, turns: 8, rounds: 2, slow: 3 };
/** An agent's system prompt and tools (Claude Code's and Codex's are 10-20K tokens), a task with
 *  its context (the project's notes and the files read first), and what each turn adds (a tool's
 *  output), in characters: 4 a token. */
const SYSTEM_CHARS = 48_000;
const TASK_CHARS = 24_000;
const TOOL_RESULT_CHARS = 4_000;
const ANSWER_TOKENS = 8;

export interface TargetFigures {
  /** Sluice's route decisions (pinned / spilled / least_loaded), from its /metrics */
  decisions?: string;
  ttftP50: number;
  ttftP95: number;
  /** cached prompt tokens / prompt tokens, over the replicas */
  cacheHitRatio: number;
  perReplica: number[];
  failed: number;
}

export interface FleetResult {
  options: FleetOptions;
  even: { random: TargetFigures; sluice: TargetFigures };
  slowed: { random: TargetFigures; sluice: TargetFigures };
}

export const words = (seed: string, chars: number) => {
  let out = "";
  for (let i = 0; out.length < chars; i++) out += `${seed}-${i} `;
  return out.slice(0, chars);
};

/** One session: its turns in order, each streamed; the TTFT of each. */
async function runSession(url: string, system: string, task: string, turns: number): Promise<{ ttfts: number[]; failed: number }> {
  const messages = [{ role: "system", content: system }, { role: "user", content: task }];
  const ttfts: number[] = [];
  let failed = 0;
  for (let t = 0; t < turns; t++) {
    const started = performance.now();
    let first: number | undefined;
    let answer = "";
    try {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ model: MODEL, stream: true, max_tokens: ANSWER_TOKENS, messages }),
      });
      if (res.status !== 200 || !res.body) throw new Error(`status ${res.status}`);
      const decoder = new TextDecoder();
      for await (const part of res.body) {
        const text = decoder.decode(part as Uint8Array, { stream: true });
        if (first === undefined && text.includes('"content"')) first = performance.now() - started;
        answer += text;
      }
      if (first !== undefined) ttfts.push(first);
    } catch {
      failed++;
    }
    // the answer and a tool result join the history, as an agent's next turn sends it
    messages.push({ role: "assistant", content: `answer ${t} ${answer.length}` }, { role: "user", content: `tool result ${t}: ${words(`${task.slice(0, 12)}-${t}`, TOOL_RESULT_CHARS)}` });
  }
  return { ttfts, failed };
}

export const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

const systemPrompts = (o: FleetOptions) => Array.from({ length: o.agents }, (_, a) => `You are agent ${a}. ${words(`agent${a}-rules`, SYSTEM_CHARS)}`);

/** Every agent's system prompt once on every replica, unmeasured: in a fleet that has run for a
 *  while they are cached everywhere, and no target should pay for the first one to come. */
export async function warmUp(replicas: Replica[], o: FleetOptions): Promise<void> {
  await Promise.all(
    replicas.flatMap((r) =>
      systemPrompts(o).map(async (system) => {
        const res = await fetch(`${r.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: MODEL, max_tokens: 1, messages: [{ role: "system", content: system }] }) });
        await res.arrayBuffer();
      }),
    ),
  );
}

export async function statsOf(replicas: Replica[]): Promise<ReplicaStats[]> {
  return Promise.all(replicas.map((r) => r.stats()));
}

/** Every session of one run at once, through `url`; the replicas' counters before and after. */
export async function runOnce(url: string, replicas: Replica[], o: FleetOptions, run: string, into: { ttfts: number[]; stats: Array<[ReplicaStats[], ReplicaStats[]]>; failed: number }) {
  const before = await statsOf(replicas);
  const systems = systemPrompts(o);
  const results = await Promise.all(
    Array.from({ length: o.sessions }, async (_, s) => {
      if (o.staggerMs) await sleep(s * o.staggerMs);
      return runSession(url, systems[s % o.agents]!, `task ${run}-${s}: ${words(`task-${run}-${s}`, TASK_CHARS)}`, o.turns);
    }),
  );
  into.stats.push([before, await statsOf(replicas)]);
  for (const r of results) {
    into.ttfts.push(...r.ttfts);
    into.failed += r.failed;
  }
}

export function figures(acc: { ttfts: number[]; stats: Array<[ReplicaStats[], ReplicaStats[]]>; failed: number }, n: number): TargetFigures {
  const delta = (f: (s: ReplicaStats) => number, i?: number) =>
    acc.stats.reduce((sum, [a, b]) => sum + (i === undefined ? b.reduce((x, s, j) => x + f(s) - f(a[j]!), 0) : f(b[i]!) - f(a[i]!)), 0);
  return {
    ttftP50: quantile(acc.ttfts, 0.5),
    ttftP95: quantile(acc.ttfts, 0.95),
    cacheHitRatio: delta((s) => s.cachedTokens) / Math.max(1, delta((s) => s.promptTokens)),
    perReplica: Array.from({ length: n }, (_, i) => delta((s) => s.requests, i)),
    failed: acc.failed,
  };
}

/** Sluice over the replicas, its routing as given (default: the configured defaults); `extra`
 *  adds top-level config blocks (scripts/trace-waterfall.ts: `tracing`). */
export async function startFleetSluice(replicas: Replica[], routing: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Promise<NodeServer & { cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-fleet-"));
  const config = {
    server: { log: { level: "warn" } },
    store: { driver: "sqlite", path: join(dir, "fleet.db") },
    channels: replicas.map((r) => ({ name: r.name, baseUrl: r.url, models: [MODEL], engineMetrics: { url: "auto", intervalMs: 500 }, healthCheck: { intervalMs: 5000 } })),
    llmModels: [{ model: MODEL, maxContext: 200_000, maxResponse: 64 }],
    apps: [{ id: "agents", model: MODEL }],
    apiKeys: [{ name: "agents", kind: "app", appId: "agents", key: KEY }],
    routing,
    ...extra,
  };
  await writeFile(join(dir, "config.json"), JSON.stringify(config));
  const sluice = await spawnNodeServer("Sluice (fleet)", { args: ["dist/main.js", "--config", join(dir, "config.json")], readyPath: "/healthz", ready: (s) => s === 200, outputFile: join(dir, "sluice.log") });
  return { ...sluice, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

const DECISIONS = ["prefix", "pinned", "spilled", "least_loaded"] as const;

/** Sluice's route decisions so far, counted: prefix, pinned, spilled, least_loaded. */
export async function decisionCounts(url: string): Promise<number[]> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return DECISIONS.map((d) => Number(new RegExp(`sluice_route_decisions_total\\{model="${MODEL}",decision="${d}"\\} (\\d+)`).exec(text)?.[1] ?? 0));
}

/** Sluice's route decisions so far: prefix/pinned/spilled/least_loaded. */
export async function decisionsOf(url: string): Promise<string> {
  return (await decisionCounts(url)).join("/");
}

/** Random floor and Sluice over the same replicas, interleaved by round. */
async function compare(replicas: Replica[], o: FleetOptions, label: string): Promise<{ random: TargetFigures; sluice: TargetFigures }> {
  const floor = await startRandomProxy(replicas.map((r) => r.url));
  const sluice = await startFleetSluice(replicas);
  const acc = { random: { ttfts: [] as number[], stats: [] as Array<[ReplicaStats[], ReplicaStats[]]>, failed: 0 }, sluice: { ttfts: [] as number[], stats: [] as Array<[ReplicaStats[], ReplicaStats[]]>, failed: 0 } };
  let decisions = "";
  try {
    for (let round = 0; round < o.rounds; round++) {
      const order: Array<"random" | "sluice"> = round % 2 === 0 ? ["random", "sluice"] : ["sluice", "random"];
      for (const target of order) {
        console.error(`fleet ${label}: round ${round + 1}/${o.rounds}, ${target}`);
        await runOnce(target === "random" ? floor.url : sluice.url, replicas, o, `${label}-${round}-${target}`, acc[target]);
      }
    }
    decisions = await decisionsOf(sluice.url);
  } finally {
    await Promise.all([floor.close(), sluice.stop().then(() => sluice.cleanup())]);
  }
  return { random: figures(acc.random, replicas.length), sluice: { ...figures(acc.sluice, replicas.length), decisions } };
}

export async function measureFleet(o: FleetOptions = FLEET_DEFAULTS): Promise<FleetResult> {
  const run = async (slowOne: number | undefined, label: string) => {
    const replicas = await startReplicas(o.replicas, { slowOne });
    try {
      await warmUp(replicas, o);
      return await compare(replicas, o, label);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
  };
  return { options: o, even: await run(undefined, "even"), slowed: await run(o.slow, "one slow") };
}

/** The section's lines for the report. */
export function fleetLines(r: FleetResult): string[] {
  const o = r.options;
  const row = (name: string, f: TargetFigures) =>
    `  ${name.padEnd(22)} TTFT p50 ${f.ttftP50.toFixed(0)} ms, p95 ${f.ttftP95.toFixed(0)} ms; cache hit ${(f.cacheHitRatio * 100).toFixed(1)} %; requests per replica ${f.perReplica.join("/")}${f.decisions ? `; prefix/pinned/spilled/least loaded ${f.decisions}` : ""}${f.failed ? `; ${f.failed} failed` : ""}`;
  return [
    `fleet: ${o.replicas} simulated vLLM replicas, ${o.sessions} concurrent sessions of ${o.agents} agents, ${o.turns} turns each, ${o.rounds} interleaved rounds per target`,
    row("random, even", r.even.random),
    row("Sluice, even", r.even.sluice),
    row(`random, r1 ${o.slow}x slow`, r.slowed.random),
    row(`Sluice, r1 ${o.slow}x slow`, r.slowed.sluice),
  ];
}

// `npx tsx bench/fleet/bench.ts [sessions turns rounds]` (after `npm run build`): the section alone
if (import.meta.url === `file://${process.argv[1]}`) {
  const [sessions, turns, rounds] = process.argv.slice(2).map(Number);
  measureFleet({ ...FLEET_DEFAULTS, sessions: sessions || FLEET_DEFAULTS.sessions, turns: turns || FLEET_DEFAULTS.turns, rounds: rounds || FLEET_DEFAULTS.rounds }).then((r) => console.log(fleetLines(r).join("\n")), (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
