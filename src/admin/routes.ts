// The key-protected read and operations routes: GET /v1/models (what a key may use) and
// /v1/models/{id}, GET /api/v1/usage (global and admin keys), and the operations API for admin keys
// (CONTRACTS §12): GET /api/admin/channels, POST /api/admin/reload. The keys API is in keys.ts.
import type { H3Event } from "h3";
import type { Keyring, KeyIdentity } from "../auth/keys.js";
import type { AppConfig, ModelConfig } from "../config/schema.js";
import { GatewayError, badRequest, notFound } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import type { ReloadResult } from "../runtime.js";
import type { Store } from "../store/types.js";
import type { ChannelRouter } from "../upstream/router.js";

export interface AdminDeps {
  keyring: Keyring;
  models: Map<string, ModelConfig>;
  apps: Map<string, AppConfig>;
  store: Store;
  router: ChannelRouter;
  reload: () => Promise<ReloadResult>;
}

export function createAdminRoutes(deps: AdminDeps) {
  const created = Math.floor(Date.now() / 1000);
  const authenticate = (event: H3Event) => deps.keyring.authenticate(event.req.headers.get("authorization"));
  const modelObject = (id: string) => ({ id, object: "model", created, owned_by: "sluice", name: deps.models.get(id)?.name ?? id });
  /** The models a key may use: its app's (none when a reload removed the app of a created key), or
   *  every model for a global or admin key. */
  const usable = (key: KeyIdentity) => {
    if (!key.appId) return [...deps.models.keys()];
    const app = deps.apps.get(key.appId);
    return app ? (app.models ?? [app.model]) : [];
  };

  async function models(event: H3Event): Promise<Response> {
    return jsonResponse({ object: "list", data: usable(authenticate(event)).map(modelObject) });
  }

  async function model(event: H3Event): Promise<Response> {
    const key = authenticate(event);
    const id = decodeURIComponent(event.context.params?.id ?? "");
    if (!usable(key).includes(id)) throw notFound("model_not_found", `The model ${JSON.stringify(id.slice(0, 100))} does not exist or this key may not use it.`);
    return jsonResponse(modelObject(id));
  }

  async function usage(event: H3Event): Promise<Response> {
    const key = authenticate(event);
    if (key.kind === "app") throw new GatewayError(403, "global_key_required", "Usage reports need a global key.");
    const q = event.url.searchParams;
    const appId = q.get("appId") || undefined;
    if (appId && !deps.apps.has(appId)) throw badRequest("invalid_request", `Unknown app ${JSON.stringify(appId.slice(0, 64))}.`, "appId");
    const groupBy = q.get("groupBy") ?? undefined;
    if (groupBy !== undefined && groupBy !== "finishReason") throw badRequest("invalid_request", `groupBy must be "finishReason".`, "groupBy");
    const summary = await deps.store.summarizeUsage({ from: parseTime(q.get("from"), "from"), to: parseTime(q.get("to"), "to"), appId, groupBy });
    return jsonResponse(summary);
  }

  async function channels(event: H3Event): Promise<Response> {
    requireAdmin(authenticate(event));
    return jsonResponse({
      channels: deps.router.entries.map((e) => {
        const breaker = deps.router.breaker(e);
        const load = e.client.load?.() ?? { active: 0, queued: 0 };
        return {
          name: e.config.name,
          models: e.config.models,
          priority: e.config.priority,
          weight: e.config.weight,
          up: e.up === true,
          breaker: { state: breaker.phase, failures: breaker.failures, retryAt: breaker.phase === "closed" ? null : new Date(breaker.retryAt).toISOString() },
          inFlight: load.active,
          queued: load.queued,
          lastError: e.lastError ? { at: new Date(e.lastError.at).toISOString(), outcome: e.lastError.outcome } : null,
        };
      }),
    });
  }

  async function reload(event: H3Event): Promise<Response> {
    requireAdmin(authenticate(event));
    const result = await deps.reload();
    return new Response(JSON.stringify(result), {
      status: result.ok ? 200 : 422,
      headers: { "content-type": "application/json; charset=utf-8" },
    });
  }

  return { models, model, usage, channels, reload };
}

export function requireAdmin(key: KeyIdentity): void {
  if (key.kind !== "admin") throw new GatewayError(403, "admin_key_required", "The operations API needs an admin key.");
}

/** `from`/`to` as epoch milliseconds or an ISO date; absent means unbounded. */
function parseTime(value: string | null, param: string): number | undefined {
  if (!value) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw badRequest("invalid_request", `${param} must be epoch milliseconds or an ISO date.`, param);
  return ms;
}
