// The quotas-by-time families (docs/operations.md#metrics): tokens each app, key or share link with a
// `tpm` used, beside that tpm, and the points its current period spent, beside its `periodPoints` —
// what the dashboard draws one against the other. Only scopes the config (or the keys API) gives such
// a quota report here: their names are a bounded set.
import { Counter, Gauge, type Registry } from "prom-client";
import type { QuotaObserver } from "../observability/observer.js";

export function createQuotaMetrics(registry: Registry): QuotaObserver {
  const reg = { registers: [registry] };
  const labelNames = ["scope_kind", "name"] as const;
  const tokens = new Counter({ name: "sluice_quota_tokens_total", help: "Tokens settled against a tokens-per-minute quota, by scope.", labelNames, ...reg });
  const tpm = new Gauge({ name: "sluice_quota_tpm", help: "The tokens per minute a scope may use.", labelNames, ...reg });
  const periodLabels = ["scope_kind", "name", "period"] as const;
  const spent = new Gauge({ name: "sluice_quota_period_spent_points", help: "Points the scope's current period (day, week, month) spent.", labelNames: periodLabels, ...reg });
  const limit = new Gauge({ name: "sluice_quota_period_points", help: "The points a scope may spend per period.", labelNames: periodLabels, ...reg });
  return {
    tokensUsed(scopeKind, name, used, max) {
      tokens.inc({ scope_kind: scopeKind, name }, used);
      tpm.set({ scope_kind: scopeKind, name }, max);
    },
    periodSpent(scopeKind, name, period, points, max) {
      spent.set({ scope_kind: scopeKind, name, period }, points);
      limit.set({ scope_kind: scopeKind, name, period }, max);
    },
  };
}
