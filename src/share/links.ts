// Share-link lookup and the share-link user id rule (docs/api.md#share-links): which link a request names,
// whether it is still open, what a valid uid (operator's or the browser's localId) looks like, and how a
// usage row names the user.
import type { ShareLinkConfig } from "../config/schema.js";
import { GatewayError, badRequest, notFound } from "../http/errors.js";
import { shareUserDigest } from "../store/share-user.js";

const MAX_UID_BYTES = 255;
// the uid becomes part of storage keys and paths, so its separators are refused
const FORBIDDEN_UID_CHARS = /[|\\/]/;

/** The configured link named by `shareId`; 404 when unknown, 410 when its `expiresAt` has passed. */
export function resolveShareLink(links: Map<string, ShareLinkConfig>, shareId: unknown, now: number): ShareLinkConfig {
  const link = typeof shareId === "string" ? links.get(shareId) : undefined;
  if (!link) throw notFound("share_link_not_found", "This share link does not exist.");
  if (link.expiresAt !== null && Date.parse(link.expiresAt) <= now) {
    throw new GatewayError(410, "share_link_expired", "This share link has expired; ask its owner for a new one.");
  }
  return link;
}

/** The 403 of a chat that belongs to someone else. */
export function chatNotOwned(param?: string): GatewayError {
  return new GatewayError(403, "chat_not_owned", "This chat belongs to another user.", { param });
}

/** True when `uid` is a usable share-link user id: a non-empty string of at most 255 UTF-8 bytes without `|`, `\` or `/`. */
export function isValidUid(uid: unknown): uid is string {
  return (
    typeof uid === "string" &&
    uid.length > 0 &&
    Buffer.byteLength(uid, "utf8") <= MAX_UID_BYTES &&
    !FORBIDDEN_UID_CHARS.test(uid)
  );
}

/** The uid unchanged, or a 400 naming the rule it breaks (never echoing the value, which may be a token). */
export function validateUid(uid: unknown): string {
  if (isValidUid(uid)) return uid;
  throw badRequest(
    "invalid_uid",
    "outLinkUid must be a non-empty string of at most 255 bytes without '|', '\\' or '/'.",
    "outLinkUid",
  );
}

/** The share-link user a usage row names (docs/store.md#share-link-users-in-usage-rows): the
 *  operator's uid on a link with `authHost`; else the uid is the browser's localId, which opens the
 *  user's chats, and only its digest is named. */
export function usageUser(link: ShareLinkConfig, uid: string): string {
  return link.authHost ? uid : shareUserDigest(link.shareId, uid);
}
