// GET /api/v1/usage (docs/api.md#usage): totals and per-app, per-model usage of a time range, for
// global and admin keys; with `groupBy` (one or more of app, model, kind, finishReason, key, share,
// user, day, hour), the groups of report.ts, as JSON or (`format=csv`) CSV. One groupBy of
// finishReason or kind also answers in the first shape of the report (per finish reason; per kind of
// model from the per-model totals and the config's kinds, docs/fleet.md#usage).
import type { H3Event } from "h3";
import type { Keyring } from "../auth/keys.js";
import { badRequest } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import { MODEL_KINDS, type ModelKind } from "../config/fleet.js";
import { timeZone } from "../config/schema.js";
import type { Store, UsageSummary, UsageTotals } from "../store/types.js";
import { roundPoints } from "../tokens/points.js";
import { GROUP_BY, UNKNOWN_KIND, usageCsv, usageGroups, type GroupBy } from "./report.js";

export interface UsageDeps {
  keyring: Keyring;
  apps: Map<string, unknown>;
  store: Store;
  /** every configured model's kind */
  kinds: Map<string, ModelKind>;
  /** server.timezone: the days and hours of a report without `tz` */
  timezone: string;
}

export type KindTotals = UsageTotals & { kind: ModelKind | typeof UNKNOWN_KIND };

export function createUsageRoute(deps: UsageDeps) {
  return async function usage(event: H3Event): Promise<Response> {
    // a global key: the route table's access (src/routes.ts)
    const q = event.url.searchParams;
    const appId = q.get("appId") || undefined;
    if (appId && !deps.apps.has(appId)) throw badRequest("invalid_request", `Unknown app ${JSON.stringify(appId.slice(0, 64))}.`, "appId");
    const by = parseGroupBy(q.get("groupBy"));
    const tz = parseTimeZone(q.get("tz"), deps.timezone);
    const format = q.get("format") ?? "json";
    if (format !== "json" && format !== "csv") throw badRequest("invalid_request", `format must be "json" or "csv".`, "format");
    const range = { from: parseTime(q.get("from"), "from"), to: parseTime(q.get("to"), "to"), appId };
    if (format === "csv") {
      const groups = await usageGroups(deps.store, deps.kinds, { ...range, by, tz });
      return new Response(usageCsv(groups, by), {
        headers: { "content-type": "text/csv; charset=utf-8", "content-disposition": 'attachment; filename="usage.csv"', "cache-control": "no-store" },
      });
    }
    // one groupBy of finishReason or kind also answers in the report's first shape (finishReasons, kinds)
    const only = by.length === 1 ? by[0] : undefined;
    const [summary, groups] = await Promise.all([
      deps.store.summarizeUsage({ ...range, groupBy: only === "finishReason" ? only : undefined }),
      by.length > 0 ? usageGroups(deps.store, deps.kinds, { ...range, by, tz }) : undefined,
    ]);
    return jsonResponse({ ...summary, ...(only === "kind" ? { kinds: totalsByKind(summary, deps.kinds) } : {}), ...(groups ? { groups } : {}) });
  };
}

/** `groupBy`: one or more of GROUP_BY, comma-separated, each once. */
function parseGroupBy(value: string | null): GroupBy[] {
  if (value === null) return [];
  const by = value.split(",").map((b) => b.trim());
  for (const b of by) {
    if (!(GROUP_BY as readonly string[]).includes(b)) {
      throw badRequest("invalid_request", `groupBy: ${JSON.stringify(b.slice(0, 32))} is not one of ${GROUP_BY.join(", ")}.`, "groupBy");
    }
  }
  if (new Set(by).size !== by.length) throw badRequest("invalid_request", "groupBy names a column twice.", "groupBy");
  return by as GroupBy[];
}

function parseTimeZone(value: string | null, fallback: string): string {
  if (!value) return fallback;
  if (!timeZone.safeParse(value).success) throw badRequest("invalid_request", `tz must be an IANA time zone name such as "Europe/Berlin".`, "tz");
  return value;
}

/** Every kind's totals, in a fixed order (kinds with no rows included, at zero). The units of
 *  inputTokens are the kind's: tokens, characters for speech, seconds of audio for transcription. */
export function totalsByKind(summary: UsageSummary, kinds: Map<string, ModelKind>): KindTotals[] {
  const zero = (kind: KindTotals["kind"]): KindTotals => ({ kind, requests: 0, inputTokens: 0, outputTokens: 0, points: 0 });
  const out = new Map<KindTotals["kind"], KindTotals>(MODEL_KINDS.map((k) => [k, zero(k)]));
  for (const m of summary.models) {
    const kind = kinds.get(m.model) ?? UNKNOWN_KIND;
    const t = out.get(kind) ?? out.set(kind, zero(kind)).get(kind)!;
    t.requests += m.requests;
    t.inputTokens += m.inputTokens;
    t.outputTokens += m.outputTokens;
    // summed per model already rounded: kept free of binary-fraction tails like every points figure
    t.points = roundPoints(t.points + m.points);
  }
  return [...out.values()];
}

/** `from`/`to` as epoch milliseconds or an ISO date; absent means unbounded. */
function parseTime(value: string | null, param: string): number | undefined {
  if (!value) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw badRequest("invalid_request", `${param} must be epoch milliseconds or an ISO date.`, param);
  return ms;
}
