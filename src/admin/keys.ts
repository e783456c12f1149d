// The keys API (docs/operations.md#keys-api), for admin keys: POST /api/admin/keys creates a key (shown in that
// answer only, stored as its sha256), GET lists every key (never a key or digest), DELETE
// /api/admin/keys/{name} revokes a created key. Config keys are listed but change only in config.json.
import type { H3Event } from "h3";
import { z } from "zod";
import type { CreatedKeys } from "../auth/created-keys.js";
import type { KeyIdentity, Keyring } from "../auth/keys.js";
import type { AppConfig } from "../config/schema.js";
import { GatewayError, badRequest, notFound } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import { parseBody } from "../http/validation.js";

/** Names go into URLs (DELETE /api/admin/keys/{name}) and metric-free logs: a plain, short set. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

// a field of the wrong type, out of bounds or not one of its values is worded as every 400 of the
// API is (json/issues.ts): only the schema's own checks carry a message
const newKeySchema = z
  .strictObject({
    name: z.string().regex(NAME, "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"),
    // admin keys come only from config.json
    kind: z.enum(["app", "global"]),
    appId: z.string().min(1).optional(),
    maxUsagePoints: z.number().min(-1).default(-1),
    qpm: z.number().int().min(0).default(0),
    // quotas by time (docs/configuration.md#quotas-by-time)
    tpm: z.number().int().min(0).default(0),
    periodPoints: z.number().min(-1).default(-1),
    period: z.enum(["day", "week", "month"]).default("day"),
    expiresAt: z.iso
      .datetime({ offset: true, error: "expected an ISO 8601 date-time such as 2027-01-31T00:00:00Z" })
      .nullable()
      .default(null)
      .transform((at) => (at === null ? null : Date.parse(at))),
  })
  .superRefine((k, ctx) => {
    if (k.kind === "app" && k.appId === undefined) ctx.addIssue({ code: "custom", path: ["appId"], message: "an app key needs appId" });
    if (k.kind === "global" && k.appId !== undefined) ctx.addIssue({ code: "custom", path: ["appId"], message: "a global key carries no appId" });
  });

export interface KeyRouteDeps {
  keyring: Keyring;
  apps: Map<string, AppConfig>;
  keys: CreatedKeys;
  readJson: (event: H3Event) => Promise<unknown>;
}

export function createKeyRoutes(deps: KeyRouteDeps) {
  const inConfig = (name: string) => deps.keyring.configured.some((k) => k.name === name);

  async function create(event: H3Event): Promise<Response> {
    const input = parseBody(newKeySchema, await deps.readJson(event));
    if (input.appId !== undefined && !deps.apps.has(input.appId)) {
      throw badRequest("invalid_request", `appId: unknown app ${quote(input.appId)}`, "appId");
    }
    const made = inConfig(input.name) ? undefined : await deps.keys.create(input, Date.now());
    if (!made) throw new GatewayError(409, "key_name_taken", `A key named ${quote(input.name)} exists already (revoked keys keep their names): choose another name.`, { param: "name" });
    const { row, key } = made;
    const answer = { name: row.name, kind: row.kind, appId: row.appId, key, createdAt: isoTime(row.createdAt), expiresAt: isoTime(row.expiresAt ?? null) };
    return new Response(JSON.stringify(answer), {
      status: 201,
      // the one answer that carries the key: no cache may keep it
      headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
    });
  }

  async function list(event: H3Event): Promise<Response> {
    const [rows, used] = await Promise.all([deps.keys.list(), deps.keys.lastUsed()]);
    const lastUsedAt = (name: string) => isoTime(used.get(name) ?? null);
    const configured = deps.keyring.configured.map((k) => ({
      name: k.name,
      kind: k.kind,
      appId: k.appId ?? null,
      source: "config",
      createdAt: null,
      expiresAt: isoTime(k.expiresAt),
      revokedAt: null,
      lastUsedAt: lastUsedAt(k.name),
      limits: limitsOf(k),
    }));
    const created = rows.map((r) => ({
      name: r.name,
      kind: r.kind,
      appId: r.appId,
      source: "api",
      createdAt: isoTime(r.createdAt),
      expiresAt: isoTime(r.expiresAt ?? null),
      revokedAt: isoTime(r.revokedAt),
      lastUsedAt: lastUsedAt(r.name),
      limits: limitsOf({ maxUsagePoints: r.maxUsagePoints, qpm: r.qpm, tpm: r.tpm ?? 0, periodPoints: r.periodPoints ?? -1, period: r.period ?? "day" }),
    }));
    return jsonResponse({ keys: [...configured, ...created] });
  }

  async function revoke(event: H3Event): Promise<Response> {
    const name = pathName(event.context.params?.name);
    if (inConfig(name)) {
      throw new GatewayError(409, "key_in_config", `The key ${quote(name)} comes from config.json: remove it there and reload.`);
    }
    const row = await deps.keys.revoke(name, Date.now());
    if (!row) throw notFound("key_not_found", `No key created through the API is named ${quote(name)}.`);
    return jsonResponse({ name: row.name, revoked: true, revokedAt: isoTime(row.revokedAt) });
  }

  return { create, list, revoke };
}

function pathName(raw: string | undefined): string {
  try {
    return decodeURIComponent(raw ?? "");
  } catch {
    throw badRequest("invalid_request", "The key name in the path is not valid percent-encoding.");
  }
}

/** A key's own limits as the list shows them (the console's budgets: docs/operations.md#keys-api). */
function limitsOf(k: Pick<KeyIdentity, "maxUsagePoints" | "qpm" | "tpm" | "periodPoints" | "period">) {
  return { maxUsagePoints: k.maxUsagePoints, qpm: k.qpm, tpm: k.tpm, periodPoints: k.periodPoints, period: k.period };
}

function isoTime(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

const quote = (text: string) => JSON.stringify(text.slice(0, 64));
