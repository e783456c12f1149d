// GET /api/v1/usage (docs/api.md#usage): totals and per-app, per-model usage of a time range (and
// per finish reason with `groupBy=finishReason`), for global and admin keys.
import type { H3Event } from "h3";
import type { Keyring } from "../auth/keys.js";
import { GatewayError, badRequest } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import type { Store } from "../store/types.js";

export interface UsageDeps {
  keyring: Keyring;
  apps: Map<string, unknown>;
  store: Store;
}

export function createUsageRoute(deps: UsageDeps) {
  return async function usage(event: H3Event): Promise<Response> {
    const key = deps.keyring.authenticate(event.req.headers.get("authorization"));
    if (key.kind === "app") throw new GatewayError(403, "global_key_required", "Usage reports need a global key.");
    const q = event.url.searchParams;
    const appId = q.get("appId") || undefined;
    if (appId && !deps.apps.has(appId)) throw badRequest("invalid_request", `Unknown app ${JSON.stringify(appId.slice(0, 64))}.`, "appId");
    const groupBy = q.get("groupBy") ?? undefined;
    if (groupBy !== undefined && groupBy !== "finishReason") throw badRequest("invalid_request", `groupBy must be "finishReason".`, "groupBy");
    const summary = await deps.store.summarizeUsage({ from: parseTime(q.get("from"), "from"), to: parseTime(q.get("to"), "to"), appId, groupBy });
    return jsonResponse(summary);
  };
}

/** `from`/`to` as epoch milliseconds or an ISO date; absent means unbounded. */
function parseTime(value: string | null, param: string): number | undefined {
  if (!value) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw badRequest("invalid_request", `${param} must be epoch milliseconds or an ISO date.`, param);
  return ms;
}
