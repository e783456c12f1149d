// The first channel by what each replica holds (docs/routing.md#prefix): among the group's usable
// channels (breaker closed, a free slot, KV cache not full, when any are), a session's own channel
// keeps it unless that one is past the guard; otherwise, unless the group is imbalanced (then the
// best of the least loaded), the best of
//   match × weights.match − (load − least) / (most + 1) × weights.load − KV use × weights.kv
// with ties (scores within TIED: no match anywhere and equal loads, or equal matches) broken by the
// fewest requests routed lately (a new prefix goes where traffic is lightest), then by rendezvous
// hashing of the request's tie key.
import type { RouteDecision } from "../observability/observer.js";
import { rendezvous, usable, type ChannelView } from "./pick.js";
import type { ChannelEntry } from "./types.js";

/** Scores this close are tied: a KV cache 3 % fuller (at the default weights) decides nothing. */
const TIED = 0.1;

export interface PrefixWeights {
  match: number;
  load: number;
  kv: number;
}

export interface Imbalance {
  /** the busiest over ratio × the least … */
  ratio: number;
  /** … and more than min above it */
  min: number;
}

export interface PrefixRequest {
  /** leading chunks each channel holds of the request's prefix, and the prefix's chunks */
  matched: (e: ChannelEntry) => number;
  chunks: number;
  /** the channel the request's session went to, if it is in the group */
  own: ChannelEntry | undefined;
  /** breaks ties: the prefix's opening, else the affinity key; undefined: the heavier weight, then at random */
  tieKey: string | undefined;
  /** requests this instance routed to the channel lately (decayed): among tied channels, the fewest
   *  first, so that new prefixes spread as their traffic does */
  recent?: (e: ChannelEntry) => number;
}

export interface PrefixChoice {
  first: ChannelEntry;
  decision: RouteDecision;
  /** the chosen channel's match, 0..1 (0 when the prefix has no chunk) */
  match: number;
}

/** A channel past the guard against the others: more than ratio × and min above their least load. */
function pastGuard(load: number, least: number, g: Imbalance): boolean {
  return load > g.ratio * least && load - least > g.min;
}

export function pickByPrefix(group: ChannelEntry[], view: ChannelView, req: PrefixRequest, o: { weights: PrefixWeights; imbalance: Imbalance; random: () => number }): PrefixChoice {
  const matchOf = (e: ChannelEntry) => (req.chunks > 0 ? req.matched(e) / req.chunks : 0);
  const own = req.own;
  if (own) {
    const others = usable(group.filter((e) => e !== own), view);
    const least = Math.min(...others.map((e) => view.load(e)));
    const leave = others.length > 0 && (view.breakerOpen(own) || view.gateFull(own) || view.kvFull(own) || pastGuard(view.load(own), least, o.imbalance));
    if (!leave) return { first: own, decision: "pinned", match: matchOf(own) };
    const first = best(others, view, req, matchOf, o);
    return { first, decision: "spilled", match: matchOf(first) };
  }
  const free = usable(group, view);
  const pool = free.length > 0 ? free : group;
  const loads = pool.map((e) => view.load(e));
  const least = Math.min(...loads);
  if (pastGuard(Math.max(...loads), least, o.imbalance)) {
    // the least loaded, and of those the one holding most of the prefix
    const first = best(pool.filter((e) => view.load(e) === least), view, req, matchOf, o);
    return { first, decision: "least_loaded", match: matchOf(first) };
  }
  const first = best(pool, view, req, matchOf, o);
  const match = matchOf(first);
  return { first, decision: match > 0 ? "prefix" : "least_loaded", match };
}

/** The highest score; ties by the tie key. */
function best(pool: ChannelEntry[], view: ChannelView, req: PrefixRequest, matchOf: (e: ChannelEntry) => number, o: { weights: PrefixWeights; random: () => number }): ChannelEntry {
  const loads = pool.map((e) => view.load(e));
  const least = Math.min(...loads);
  const scale = Math.max(...loads) + 1;
  const w = o.weights;
  const scores = pool.map((e, i) => matchOf(e) * w.match - ((loads[i]! - least) / scale) * w.load - view.kv(e) * w.kv);
  const top = Math.max(...scores);
  return tieBreak(
    quietest(
      pool.filter((_, i) => top - scores[i]! <= TIED),
      req.recent,
    ),
    req.tieKey,
    o.random,
  );
}

/** Of tied channels, those with the fewest recent requests (rounded to whole ones: near counts stay
 *  tied, and a channel routed to a moment ago counts one). */
function quietest(tied: ChannelEntry[], recent: ((e: ChannelEntry) => number) | undefined): ChannelEntry[] {
  if (tied.length <= 1 || !recent) return tied;
  const counts = tied.map((e) => Math.round(recent(e)));
  const least = Math.min(...counts);
  return tied.filter((_, i) => counts[i] === least);
}

function tieBreak(tied: ChannelEntry[], key: string | undefined, random: () => number): ChannelEntry {
  if (tied.length === 1) return tied[0]!;
  if (key !== undefined) return rendezvous(tied, key);
  const heaviest = Math.max(...tied.map((e) => e.config.weight));
  const heavy = tied.filter((e) => e.config.weight === heaviest);
  return heavy[Math.floor(random() * heavy.length)] ?? heavy[0]!;
}
