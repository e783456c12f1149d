// Which replica first (docs/routing.md): a request with an affinity key goes to its rendezvous
// (highest random weight) channel among the up channels of the top priority — every instance picks
// the same one with no shared state, and a channel added or removed moves only its own sessions —
// unless that channel must be spilled (breaker open, gate full, KV cache full, or a load at least
// spillLoad × (the least other load + 1)); a spilled request, and one with no key, goes to the
// least loaded channel (power of two choices for requests with no key). The rest follow in the
// order failover tries them.
import { createHash } from "node:crypto";
import type { RouteDecision } from "../observability/observer.js";
import type { ChannelEntry } from "./types.js";

/** What the pick knows of a channel now. */
export interface ChannelView {
  load(e: ChannelEntry): number;
  /** the KV cache is at least 95 % used: the channel counts as at spill load */
  kvFull(e: ChannelEntry): boolean;
  /** the engine's KV cache use, 0..1 (0 when unknown) */
  kv(e: ChannelEntry): number;
  /** every connection (or concurrency slot) is busy: the call would queue */
  gateFull(e: ChannelEntry): boolean;
  breakerOpen(e: ChannelEntry): boolean;
}

export interface PickOptions {
  /** the request's affinity key (a digest, never the session itself); undefined: none */
  affinity: string | undefined;
  spillLoad: number;
  random: () => number;
}

/** How the first channel of the group is chosen: by session (below) or by prefix (./prefix-score.ts). */
export type ChooseFirst = (group: ChannelEntry[]) => { first: ChannelEntry; decision: RouteDecision };

/** The channels in the order to try them, and how the first was chosen. */
export function orderChannels(list: readonly ChannelEntry[], view: ChannelView, o: PickOptions, choose?: ChooseFirst): { ordered: ChannelEntry[]; decision: RouteDecision } {
  const up = list.filter((e) => e.up !== false);
  const pool = up.length > 0 ? up : [...list];
  const top = Math.max(...pool.map((e) => e.config.priority));
  const group = pool.filter((e) => e.config.priority === top);
  const { first, decision } = choose ? choose(group) : pickFirst(group, view, o);
  const rest = list.filter((e) => e !== first);
  // failover: up before down, higher priority first, then the least loaded
  rest.sort((a, b) => Number(a.up === false) - Number(b.up === false) || b.config.priority - a.config.priority || view.load(a) - view.load(b) || b.config.weight - a.config.weight);
  return { ordered: [first, ...rest], decision };
}

function pickFirst(group: ChannelEntry[], view: ChannelView, o: PickOptions): { first: ChannelEntry; decision: RouteDecision } {
  if (o.affinity === undefined) return { first: twoChoices(group, view, o.random), decision: "least_loaded" };
  const pinned = rendezvous(group, o.affinity);
  const others = usable(group.filter((e) => e !== pinned), view);
  if (others.length === 0 || !mustSpill(pinned, others, view, o.spillLoad)) return { first: pinned, decision: "pinned" };
  return { first: leastLoaded(others, view, o.random), decision: "spilled" };
}

function mustSpill(pinned: ChannelEntry, others: ChannelEntry[], view: ChannelView, spillLoad: number): boolean {
  if (view.breakerOpen(pinned) || view.gateFull(pinned) || view.kvFull(pinned)) return true;
  const least = Math.min(...others.map((e) => view.load(e)));
  return view.load(pinned) >= spillLoad * (least + 1);
}

/** Channels a spilled request may go to: breaker closed, a free slot and KV cache room, when any has them. */
export function usable(list: ChannelEntry[], view: ChannelView): ChannelEntry[] {
  const open = list.filter((e) => !view.breakerOpen(e));
  const free = open.filter((e) => !view.gateFull(e) && !view.kvFull(e));
  return free.length > 0 ? free : open;
}

/** Highest random weight: score = weight / -ln(u), u a uniform hash of (key, channel name). */
export function rendezvous(group: readonly ChannelEntry[], key: string): ChannelEntry {
  let best = group[0]!;
  let bestScore = -1;
  for (const e of group) {
    const digest = createHash("sha256").update(key).update("\0").update(e.config.name).digest();
    const u = (digest.readUIntBE(0, 6) + 0.5) / 2 ** 48;
    const score = e.config.weight / -Math.log(u);
    if (score > bestScore) [best, bestScore] = [e, score];
  }
  return best;
}

/** The least loaded; ties by weight (the heavier first), then at random. */
function leastLoaded(list: ChannelEntry[], view: ChannelView, random: () => number): ChannelEntry {
  const least = Math.min(...list.map((e) => view.load(e)));
  const tied = list.filter((e) => view.load(e) === least);
  const heaviest = Math.max(...tied.map((e) => e.config.weight));
  const best = tied.filter((e) => e.config.weight === heaviest);
  return best[Math.floor(random() * best.length)] ?? best[0]!;
}

/** Power of two choices: two channels drawn by weight, the less loaded of them (ties by weight). */
function twoChoices(group: ChannelEntry[], view: ChannelView, random: () => number): ChannelEntry {
  const list = usable(group, view);
  const pool = list.length > 0 ? list : group;
  if (pool.length <= 2) return leastLoaded(pool, view, random);
  const a = byWeight(pool, random);
  const b = byWeight(pool.filter((e) => e !== a), random);
  return leastLoaded([a, b], view, random);
}

function byWeight(list: ChannelEntry[], random: () => number): ChannelEntry {
  let r = random() * list.reduce((sum, e) => sum + e.config.weight, 0);
  for (const e of list) {
    r -= e.config.weight;
    if (r < 0) return e;
  }
  return list[list.length - 1]!;
}
