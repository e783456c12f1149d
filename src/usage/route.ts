// GET /api/v1/usage (docs/api.md#usage): totals and per-app, per-model usage of a time range (and
// per finish reason with `groupBy=finishReason`, per kind of model with `groupBy=kind`: from the
// per-model totals and the config's kinds, docs/fleet.md#usage), for global and admin keys.
import type { H3Event } from "h3";
import type { Keyring } from "../auth/keys.js";
import { GatewayError, badRequest } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import { MODEL_KINDS, type ModelKind } from "../config/fleet.js";
import type { Store, UsageSummary, UsageTotals } from "../store/types.js";
import { roundPoints } from "../tokens/points.js";

export interface UsageDeps {
  keyring: Keyring;
  apps: Map<string, unknown>;
  store: Store;
  /** every configured model's kind */
  kinds: Map<string, ModelKind>;
}

/** A model no longer configured: its rows say nothing of what it was for. */
const UNKNOWN_KIND = "unknown";

export type KindTotals = UsageTotals & { kind: ModelKind | typeof UNKNOWN_KIND };

export function createUsageRoute(deps: UsageDeps) {
  return async function usage(event: H3Event): Promise<Response> {
    const key = deps.keyring.authenticate(event.req.headers.get("authorization"));
    if (key.kind === "app") throw new GatewayError(403, "global_key_required", "Usage reports need a global key.");
    const q = event.url.searchParams;
    const appId = q.get("appId") || undefined;
    if (appId && !deps.apps.has(appId)) throw badRequest("invalid_request", `Unknown app ${JSON.stringify(appId.slice(0, 64))}.`, "appId");
    const groupBy = q.get("groupBy") ?? undefined;
    if (groupBy !== undefined && groupBy !== "finishReason" && groupBy !== "kind") throw badRequest("invalid_request", `groupBy must be "finishReason" or "kind".`, "groupBy");
    const range = { from: parseTime(q.get("from"), "from"), to: parseTime(q.get("to"), "to"), appId };
    const summary = await deps.store.summarizeUsage({ ...range, groupBy: groupBy === "finishReason" ? groupBy : undefined });
    return jsonResponse(groupBy === "kind" ? { ...summary, kinds: totalsByKind(summary, deps.kinds) } : summary);
  };
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
