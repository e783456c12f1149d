// Who is calling a metered endpoint: an app key, or a share-link user (no key) where the kind
// admits them. Resolves the app and the budget and rate limits that apply (docs/api.md#keys).
import type { AppConfig, ShareLinkConfig } from "../config/schema.js";
import { missingApiKey, type Keyring, type KeyIdentity } from "../auth/keys.js";
import { GatewayError } from "../http/errors.js";
import type { QuotaLimit } from "./quota.js";

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
  req: { shareId?: string; outLinkUid?: string },
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
  // an admin key with an app serves that app's calls: FastGPT calls models with its AI Proxy token
  // (docs/fastgpt.md#model-calls)
  if (key.kind === "global" || !key.appId) {
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
