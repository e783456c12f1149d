// Who is calling the chat endpoint: an app key, or a share-link user (no key). Resolves the app,
// the model it may use, and the budget and rate limits that apply.
import type { AppConfig, ModelConfig, ShareLinkConfig } from "../config/schema.js";
import { missingApiKey, type Keyring, type KeyIdentity } from "../auth/keys.js";
import { GatewayError, notFound } from "../http/errors.js";
import type { QuotaLimit } from "./quota.js";
import type { ChatRequest } from "./request-schema.js";

export interface Caller {
  app: AppConfig;
  key?: KeyIdentity;
  /** share-link callers: the link and the outLinkUid (authToken or localId) they sent */
  share?: { link: ShareLinkConfig; token: string };
  limits: QuotaLimit[];
}

export interface CallerDeps {
  keyring: Keyring;
  apps: Map<string, AppConfig>;
  resolveShareLink: (shareId: unknown, now: number) => ShareLinkConfig;
}

/** `key`: the identity of the request's Authorization header, checked before the body was read.
 *  `what`: the endpoint, in the words of the 403 a global key gets ("Chat", "Embeddings"). */
export function identifyCaller(
  deps: CallerDeps,
  key: KeyIdentity | undefined,
  req: Pick<ChatRequest, "shareId" | "outLinkUid">,
  now: number,
  what = "Chat",
): Caller {
  if (!key && req.shareId !== undefined) {
    const link = deps.resolveShareLink(req.shareId, now);
    if (!req.outLinkUid) throw new GatewayError(400, "missing_out_link_uid", "outLinkUid is required with shareId.", { param: "outLinkUid" });
    const app = deps.apps.get(link.appId)!;
    return {
      app,
      share: { link, token: req.outLinkUid },
      limits: [
        appLimit(app),
        { scope: `share:${link.shareId}`, label: "This share link", maxUsagePoints: link.maxUsagePoints, qpm: link.qpm },
      ],
    };
  }
  if (!key) throw missingApiKey();
  if (key.kind !== "app" || !key.appId) {
    throw new GatewayError(403, "app_key_required", `${what} needs an application key: this is a global key. Use the API key of the application you want to ${what === "Chat" ? "chat with" : "use"}.`);
  }
  const app = deps.apps.get(key.appId);
  // a created key outlives config reloads: its app may have been removed since
  if (!app) throw new GatewayError(403, "app_not_found", "The application of this key is no longer configured; ask the operator for a key of an existing application.");
  return {
    app,
    key,
    limits: [appLimit(app), { scope: `key:${key.name}`, label: `API key ${key.name}`, maxUsagePoints: key.maxUsagePoints, qpm: key.qpm }],
  };
}

function appLimit(app: AppConfig): QuotaLimit {
  return { scope: `app:${app.id}`, label: `App ${app.id}`, maxUsagePoints: app.maxUsagePoints, qpm: app.qpm };
}

/** The model named by the request (absent: the app's default); 404 when the app may not use it. */
export function resolveModel(models: Map<string, ModelConfig>, app: AppConfig, requested: string | undefined, serves: (m: string) => boolean): ModelConfig {
  const name = requested ?? app.model;
  const allowed = app.models ?? [app.model];
  const model = models.get(name);
  if (!model || !allowed.includes(name) || !serves(name)) {
    throw notFound("model_not_found", `The model ${JSON.stringify(name.slice(0, 100))} does not exist or this app may not use it.`);
  }
  return model;
}
