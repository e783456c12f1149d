// GET /v1/models (what a key may use) and GET /api/v1/usage (global keys only).
import type { H3Event } from "h3";
import type { Keyring } from "./auth/keys.js";
import type { AppConfig, ModelConfig } from "./config/schema.js";
import { GatewayError, badRequest } from "./http/errors.js";
import { jsonResponse } from "./http/json.js";
import type { Store } from "./store/types.js";

export interface AdminDeps {
  keyring: Keyring;
  models: Map<string, ModelConfig>;
  apps: Map<string, AppConfig>;
  store: Store;
}

export function createAdminRoutes(deps: AdminDeps) {
  const created = Math.floor(Date.now() / 1000);

  async function models(event: H3Event): Promise<Response> {
    const key = deps.keyring.authenticate(event.req.headers.get("authorization"));
    const app = key.appId ? deps.apps.get(key.appId) : undefined;
    const names = app ? (app.models ?? [app.model]) : [...deps.models.keys()];
    return jsonResponse({
      object: "list",
      data: names.map((id) => ({ id, object: "model", created, owned_by: "sluice", name: deps.models.get(id)?.name ?? id })),
    });
  }

  async function usage(event: H3Event): Promise<Response> {
    const key = deps.keyring.authenticate(event.req.headers.get("authorization"));
    if (key.kind !== "global") throw new GatewayError(403, "global_key_required", "Usage reports need a global key.");
    const q = event.url.searchParams;
    const appId = q.get("appId") || undefined;
    if (appId && !deps.apps.has(appId)) throw badRequest("invalid_request", `Unknown app ${JSON.stringify(appId.slice(0, 64))}.`, "appId");
    const summary = await deps.store.summarizeUsage({ from: parseTime(q.get("from"), "from"), to: parseTime(q.get("to"), "to"), appId });
    return jsonResponse(summary);
  }

  return { models, usage };
}

/** `from`/`to` as epoch milliseconds or an ISO date; absent means unbounded. */
function parseTime(value: string | null, param: string): number | undefined {
  if (!value) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw badRequest("invalid_request", `${param} must be epoch milliseconds or an ISO date.`, param);
  return ms;
}
