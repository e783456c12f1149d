// How a usage row names a share-link user whose uid is their credential (docs/store.md#share-link-users-in-usage-rows):
// on a link without `authHost` the browser's localId is both the user's name and what opens their
// chats, so rows keep only its digest. The same digest is made in SQL by the migrations that rewrote
// rows stored before (src/store/migrations.ts, src/store/postgres-migrations.ts): change neither alone.
import { hash } from "node:crypto";

/** What is hashed before the link and the uid: the digest of a localId is Sluice's alone, never
 *  equal to another sha256 of it (the concurrency scope's, the affinity key's). */
export const SHARE_USER_PREFIX = "sluice share user|";
/** What a digest starts with in a usage row, and how many hex digits of the sha256 follow (128 bits). */
export const SHARE_USER_MARK = "sha256:";
export const SHARE_USER_HEX_DIGITS = 32;

/** A share-link user's name in usage rows: `sha256:` and 32 hex digits of
 *  sha256("sluice share user|" + shareId + "|" + uid). Stable (one user's rows still group) and
 *  not reversible into the uid: a localId is a random id the browser made. */
export function shareUserDigest(shareId: string, uid: string): string {
  return SHARE_USER_MARK + hash("sha256", `${SHARE_USER_PREFIX}${shareId}|${uid}`, "hex").slice(0, SHARE_USER_HEX_DIGITS);
}
