// The operations API for admin keys (docs/operations.md#operations-api): GET /api/admin/channels,
// POST /api/admin/reload. The keys API is in keys.ts.
import type { H3Event } from "h3";
import type { ChannelBook } from "../upstream/channel-book.js";
import type { Keyring } from "../auth/keys.js";
import { GatewayError } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import type { ChannelRouter } from "../upstream/router.js";

export interface ReloadResult {
  ok: boolean;
  errors?: string[];
  /** config.json's channels the store hides (overridden or deleted through FastGPT's AI Proxy API) */
  hidden?: string[];
}

export interface AdminDeps {
  keyring: Keyring;
  router: ChannelRouter;
  reload: () => Promise<ReloadResult>;
  channels: ChannelBook;
  /** config.json's channel names */
  configured: Set<string>;
  /** builds the runtime again over the store's channels */
  rebuild: () => void;
}

export function createAdminRoutes(deps: AdminDeps) {

  async function channels(event: H3Event): Promise<Response> {
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
    const result = await deps.reload();
    return jsonResponse(result, result.ok ? 200 : 422);
  }

  /** DELETE /api/admin/channels/{name}/override: config.json's channel again, as the file has it
   *  (an override or tombstone written through FastGPT's AI Proxy API dropped). */
  async function dropOverride(event: H3Event): Promise<Response> {
    const name = decodeURIComponent(event.context.params?.name ?? "");
    if (!deps.configured.has(name) || deps.channels.rowIds([name]).length === 0)
      throw new GatewayError(404, "channel_not_found", "No channel of config.json has that name.");
    // config.json's channel back beside an API channel of its name: two of one name, every later write refused
    if (deps.channels.clashes([name]).length > 0)
      throw new GatewayError(409, "channel_name_taken", "A channel created through the AI Proxy API has that name: rename or delete it first.");
    await deps.channels.write([{ ref: name, record: null, deleted: false }]);
    deps.rebuild();
    return jsonResponse({ ok: true });
  }

  return { channels, reload, dropOverride };
}
