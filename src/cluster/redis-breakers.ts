// Circuit breakers shared through Redis (docs/configuration.md#routing). The ClusterState's breaker calls are
// synchronous — the router asks "may this attempt go?" on its hot path and must not wait for a round
// trip — so each instance keeps a mirror of every channel's breaker, replaced by the views Redis
// publishes on each change (a failure, opening, the probe, closing). A result goes to Redis (one Lua
// step) only when it can change the shared state, so a healthy channel costs no round trip. Past the
// cooldown, the probe is claimed in Redis (SET NX PX): one instance of all probes. While Redis is
// unreachable each instance falls back to its own breaker (breaker.ts), fed with every result.
import { Breaker, DEFAULT_MAX_COOLDOWN_MS, type BreakerOptions, type BreakerSettings } from "./breaker.js";
import type { Scripts } from "./redis-scripts.js";
import type { BreakerView } from "./types.js";

/** a breaker hash outlives its last change by this much, and by twice the longest cooldown */
const BREAKER_TTL_MS = 60 * 60_000;

interface Mirror {
  view: BreakerView;
  /** the version of `view` (Redis's clock in µs): older views heard later are ignored */
  version: number;
  /** this instance won the probe and has not sent it yet */
  probe: boolean;
  claiming: boolean;
  /** a request was refused while open: claim the probe as soon as the cooldown ends */
  wanted: boolean;
  timer?: NodeJS.Timeout;
  /** this instance's own breaker, used while Redis is unreachable */
  local: Breaker;
}

interface PublishedView extends BreakerView {
  c: string;
  v: string;
}

export interface SharedBreakersOptions {
  scripts: Scripts;
  settings: BreakerSettings;
  instance: string;
  /** namespaced Redis key of a channel's breaker hash, or of its probe claim */
  key: (kind: "breaker" | "probe", channel: string) => string;
  /** the pub/sub topic of breaker views */
  topic: string;
  /** both Redis connections are up: the mirrors are current */
  shared: () => boolean;
}

export function createSharedBreakers(opts: SharedBreakersOptions) {
  const { scripts, instance, topic } = opts;
  const fixed = opts.settings;
  const settings: () => BreakerOptions = typeof fixed === "function" ? fixed : () => fixed;
  const mirrors = new Map<string, Mirror>();
  let closed = false;

  const maxCooldownMs = () => settings().maxCooldownMs ?? DEFAULT_MAX_COOLDOWN_MS;
  const args = (channel: string) => [channel, topic, Math.max(BREAKER_TTL_MS, 2 * maxCooldownMs())];
  const keys = (channel: string) => [opts.key("breaker", channel), opts.key("probe", channel)];

  function mirrorOf(channel: string): Mirror {
    let m = mirrors.get(channel);
    if (!m) {
      m = { view: { phase: "closed", failures: 0, retryAt: 0 }, version: 0, probe: false, claiming: false, wanted: false, local: new Breaker(opts.settings) };
      mirrors.set(channel, m);
      // a channel first used here may already be open on other instances
      if (opts.shared()) read(channel);
    }
    return m;
  }

  /** Takes a view from Redis (a reply or a publication) unless a newer one was already taken. */
  function adopt(published: PublishedView, probeWon = false): void {
    const m = mirrors.get(published.c);
    if (!m) return;
    const version = Number(published.v);
    // the claim's own publication may arrive before its reply, which alone says who won
    if (version < m.version || (version === m.version && !probeWon)) return;
    m.version = version;
    m.view = { phase: published.phase, failures: published.failures, retryAt: published.retryAt };
    m.probe = probeWon;
    if (m.view.phase === "closed") m.wanted = false;
    schedule(published.c, m);
  }

  /** An instance that was refused the channel claims the probe when the cooldown ends. */
  function schedule(channel: string, m: Mirror): void {
    clearTimeout(m.timer);
    if (m.view.phase === "closed" || !m.wanted || m.probe || closed) return;
    m.timer = setTimeout(() => claim(channel, Date.now()), Math.max(0, m.view.retryAt - Date.now())).unref();
  }

  const adoptReply = (reply: unknown, probeWon = false) => {
    if (typeof reply === "string") adopt(JSON.parse(reply) as PublishedView, probeWon);
  };

  function read(channel: string): void {
    scripts.breakerRead(keys(channel), args(channel)).then(adoptReply, () => {});
  }

  function claim(channel: string, now: number): void {
    const m = mirrorOf(channel);
    if (m.claiming || closed) return;
    m.claiming = true;
    scripts
      .breakerClaim(keys(channel), [...args(channel), instance, now, settings().cooldownMs])
      .then((reply) => {
        const [won, view] = reply as [number, string];
        adoptReply(view, won === 1);
      }, () => {})
      .finally(() => (m.claiming = false));
  }

  return {
    admit(channel: string, now: number): boolean {
      const m = mirrorOf(channel);
      if (!opts.shared()) return m.local.admit(now);
      if (m.view.phase === "closed") return true;
      if (m.probe) {
        m.probe = false;
        return true;
      }
      const wanted = m.wanted;
      m.wanted = true;
      if (now >= m.view.retryAt) claim(channel, now);
      else if (!wanted) schedule(channel, m);
      return false;
    },

    record(channel: string, ok: boolean, now: number, retryAfterMs = 0): void {
      const m = mirrorOf(channel);
      m.local.record(ok, now, retryAfterMs);
      if (!opts.shared() || (ok && m.view.phase === "closed" && m.view.failures === 0)) return;
      const { failures, cooldownMs } = settings();
      scripts
        .breakerResult(keys(channel), [...args(channel), ok ? 1 : 0, now, retryAfterMs, failures, cooldownMs, maxCooldownMs()])
        .then((reply) => adoptReply(reply), () => {});
    },

    view(channel: string): BreakerView {
      const m = mirrorOf(channel);
      return opts.shared() ? { ...m.view } : m.local.view;
    },

    /** A view published on the breaker topic. */
    heard(message: string): void {
      adopt(JSON.parse(message) as PublishedView);
    },

    /** After a reconnect: the views of every channel known here, read again. */
    resync(): void {
      for (const channel of mirrors.keys()) read(channel);
    },

    close(): void {
      closed = true;
      for (const m of mirrors.values()) clearTimeout(m.timer);
    },
  };
}

export type SharedBreakers = ReturnType<typeof createSharedBreakers>;
