// Who is calling a metered endpoint: an app key, or a share-link user (no key) where the kind
// admits them. Resolves the app and the budget and rate limits that apply (docs/api.md#keys).
import type { RequestTrace } from "../tracing/request-trace.js";
import { hash } from "node:crypto";
import type { AppConfig, ShareLinkConfig } from "../config/schema.js";
import { missingApiKey, type Keyring, type KeyIdentity } from "../auth/keys.js";
import { GatewayError } from "../http/errors.js";
import type { ConcurrencyLimit } from "./concurrency.js";
import { periodSpan, type Period } from "../time/periods.js";
import type { QuotaLimit } from "./quota.js";

export interface Caller {
  app: AppConfig;
  key?: KeyIdentity;
  /** share-link callers: the link and the outLinkUid (authToken or localId) they sent */
  share?: { link: ShareLinkConfig; token: string; trace?: RequestTrace };
  /** its own scope, `key:<name>` or `share:<shareId>`: what is kept of it across requests (an
   *  agent's counts) is kept under it, never under a period's scope (docs/api.md#limits) */
  scope: string;
  /** its app's limits, then its own (a period budget last) */
  limits: QuotaLimit[];
  /** its place in a channel's queue: the key's or link's priority, else its app's */
  priority: number;
  /** its caps on calls in flight (those above 0) */
  concurrency: ConcurrencyLimit[];
}

export interface CallerDeps {
  keyring: Keyring;
  apps: Map<string, AppConfig>;
  resolveShareLink: (shareId: unknown, now: number) => ShareLinkConfig;
  /** server.timezone: where period budgets' days, weeks and months begin */
  timezone: string;
}

/** A share-link user's fields, as the body sent them (`shareId` of any type: only a link's id matches). */
export interface ShareFields {
  shareId?: unknown;
  outLinkUid?: string;
}

const SHARE_ID = Buffer.from('"shareId"');

/** False when a body's bytes cannot hold a `shareId` field (a keyless body without one is refused
 *  before it is parsed; a key written with JSON escapes counts as absent). */
export const mayNameShareLink = (raw: Buffer): boolean => raw.includes(SHARE_ID);

/** The share-link fields of a body not validated yet. */
export function shareFields(body: unknown): ShareFields {
  if (!body || typeof body !== "object") return {};
  const { shareId, outLinkUid } = body as Record<string, unknown>;
  return { shareId, outLinkUid: typeof outLinkUid === "string" ? outLinkUid : undefined };
}

/** `key`: the identity of the request's Authorization header, checked before the body was read.
 *  `what`: the endpoint, in the words of the 403 a global key gets ("Chat", "Embeddings"). */
export function identifyCaller(
  deps: CallerDeps,
  key: KeyIdentity | undefined,
  req: ShareFields,
  now: number,
  what = "Chat",
): Caller {
  if (!key && req.shareId !== undefined) {
    const link = deps.resolveShareLink(req.shareId, now);
    if (!req.outLinkUid) throw new GatewayError(400, "missing_out_link_uid", "outLinkUid is required with shareId.", { param: "outLinkUid" });
    const app = deps.apps.get(link.appId)!;
    // a link's cap is per user: the outLinkUid, hashed (it may be an operator's token)
    const scope = `share:${link.shareId}`;
    const user = link.maxConcurrent ? `${scope}:user:${hash("sha256", req.outLinkUid).slice(0, 24)}` : "";
    return {
      app,
      share: { link, token: req.outLinkUid },
      scope,
      limits: [...appLimits(app, now, deps.timezone), ...limitsOf(scope, "This share link", link, now, deps.timezone)],
      priority: link.priority ?? app.priority,
      concurrency: caps(app, { scope: user, label: "This share link", max: link.maxConcurrent ?? 0 }),
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
  const scope = `key:${key.name}`;
  return {
    app,
    key,
    scope,
    limits: [...appLimits(app, now, deps.timezone), ...limitsOf(scope, `API key ${key.name}`, key, now, deps.timezone)],
    priority: key.priority ?? app.priority,
    concurrency: caps(app, { scope, label: `API key ${key.name}`, max: key.maxConcurrent ?? 0 }),
  };
}

/** The app's cap on calls in flight and the key's or link user's, those that are set. */
function caps(app: AppConfig, own: ConcurrencyLimit): ConcurrencyLimit[] {
  return [{ scope: `app:${app.id}`, label: `App ${app.id}`, max: app.maxConcurrent }, own].filter((c) => c.max > 0);
}

/** What an app, key or share link limits. */
export interface LimitFields {
  maxUsagePoints: number;
  qpm: number;
  tpm: number;
  periodPoints: number;
  period: Period;
}

const appLimits = (app: AppConfig, now: number, tz: string) => limitsOf(`app:${app.id}`, `App ${app.id}`, app, now, tz);

/** The owner's lifetime budget, rates and tokens per minute; and its budget of the period `now` is
 *  in, when it has one: a budget of its own, spent under a scope named by the period
 *  (`key:web@day:2026-11-27`), so the next period starts from nothing (docs/api.md#budgets). */
function limitsOf(scope: string, label: string, o: LimitFields, now: number, tz: string): QuotaLimit[] {
  const limits: QuotaLimit[] = [{ scope, label, maxUsagePoints: o.maxUsagePoints, qpm: o.qpm, tpm: o.tpm }];
  if (o.periodPoints >= 0) {
    const span = periodSpan(now, o.period, tz);
    limits.push({ scope: `${scope}@${o.period}:${span.label}`, label, maxUsagePoints: o.periodPoints, qpm: 0, tpm: 0, period: { name: o.period, resetsAt: span.end } });
  }
  return limits;
}

/** The longest end-user name a usage row keeps (docs/api.md#usage). */
const MAX_USER_CHARS = 255;

/** The end user a request names, for the usage report (docs/api.md#usage): OpenAI's `user` or
 *  `safety_identifier`, or Anthropic's `metadata.user_id`; undefined when it names none. */
export function endUser(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const b = body as { user?: unknown; safety_identifier?: unknown; metadata?: { user_id?: unknown } | null };
  const named = [b.user, b.safety_identifier, typeof b.metadata === "object" && b.metadata !== null ? b.metadata.user_id : undefined];
  const user = named.find((u): u is string => typeof u === "string" && u.length > 0);
  return user?.slice(0, MAX_USER_CHARS);
}
