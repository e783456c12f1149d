// The quotas-by-time families (docs/operations.md#metrics): tokens each app, key or share link with a
// `tpm` used, beside that tpm, and the points its current period spent, beside its `periodPoints` —
// what the dashboard draws one against the other. Only scopes the config (or the keys API) gives such
// a quota report here: their names are a bounded set.
import { LRUCache } from "lru-cache";
import { Counter, Gauge, type Registry } from "prom-client";
import type { QuotaObserver } from "../observability/observer.js";

interface ScopeTokens {
  labels: { scope_kind: string; name: string };
  /** tokens reported since the last scrape */
  tokens: number;
  tpm: number;
}

export function createQuotaMetrics(registry: Registry): QuotaObserver {
  const reg = { registers: [registry] };
  const labelNames = ["scope_kind", "name"] as const;
  // added up per scope and handed to prom-client at each scrape: labelling every report costs more
  // than the report itself
  const scopes = new LRUCache<string, ScopeTokens>({ max: 10_000 });
  new Counter({
    name: "sluice_quota_tokens_total",
    help: "Tokens settled against a tokens-per-minute quota, by scope.",
    labelNames,
    collect() {
      for (const s of scopes.values()) {
        this.inc(s.labels, s.tokens);
        s.tokens = 0;
      }
    },
    ...reg,
  });
  new Gauge({
    name: "sluice_quota_tpm",
    help: "The tokens per minute a scope may use.",
    labelNames,
    collect() {
      for (const s of scopes.values()) this.set(s.labels, s.tpm);
    },
    ...reg,
  });
  const periodLabels = ["scope_kind", "name", "period"] as const;
  const spent = new Gauge({ name: "sluice_quota_period_spent_points", help: "Points the scope's current period (day, week, month) spent.", labelNames: periodLabels, ...reg });
  const limit = new Gauge({ name: "sluice_quota_period_points", help: "The points a scope may spend per period.", labelNames: periodLabels, ...reg });
  return {
    tokensUsed(scopeKind, name, used, tpm) {
      const id = `${scopeKind}:${name}`;
      const s = scopes.get(id) ?? scopes.set(id, { labels: { scope_kind: scopeKind, name }, tokens: 0, tpm }).get(id)!;
      s.tokens += used;
      s.tpm = tpm;
    },
    periodSpent(scopeKind, name, period, points, max) {
      spent.set({ scope_kind: scopeKind, name, period }, points);
      limit.set({ scope_kind: scopeKind, name, period }, max);
    },
  };
}
