// Who may call a route (docs/architecture.md#routes): a column of the route table (src/routes.ts),
// checked here once, before the route's handler, in one wording (a route's error dialect may put it
// in its own words: FastGPT's AI Proxy envelope does). The key it admitted is the handler's to read
// (routeKey); no handler authenticates by itself.
import type { H3Event } from "h3";
import { GatewayError } from "../http/errors.js";
import type { KeyIdentity, Keyring } from "./keys.js";

/** `admin`: an admin key; `global`: a key of no app (admin or global); `key`: any key;
 *  `pipeline`: the metered pipeline checks the key itself, before the body is read (or a share
 *  link's user, where the kind admits them: src/metered/request.ts); `anyone`: no key (the share
 *  API names its users in the body; pages and assets). */
export type Access = "admin" | "global" | "key" | "pipeline" | "anyone";

interface Admitted {
  routeKey?: KeyIdentity;
}

/** Whether `access` needs a key checked before the handler. */
export const checksKey = (access: Access): boolean => access === "admin" || access === "global" || access === "key";

/** The request's key, judged for the route's `access` (401 without a good one, 403 for the wrong kind). */
export async function admitCaller(keyring: Keyring, access: Access, event: H3Event): Promise<void> {
  const key = await keyring.authenticateFresh(event.req.headers.get("authorization"));
  if (access === "admin" && key.kind !== "admin") throw new GatewayError(403, "admin_key_required", "This endpoint needs an admin key.");
  if (access === "global" && key.kind === "app") throw new GatewayError(403, "global_key_required", "This endpoint needs a global key.");
  (event.context as Admitted).routeKey = key;
}

/** The key the route's access admitted (a route of access admin, global or key). */
export function routeKey(event: H3Event): KeyIdentity {
  const key = (event.context as Admitted).routeKey;
  if (!key) throw new Error("this route admits no key: its access in src/routes.ts is not admin, global or key");
  return key;
}
