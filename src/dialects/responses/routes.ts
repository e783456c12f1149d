// GET and DELETE /v1/responses/{id} (docs/codex.md#store-and-previous_response_id): a stored response,
// for the key that made it (any key of its app when the app shares its chats): 404 for any other,
// as for one missing or expired. A delete takes the responses continued from it along.
import { routeKey } from "../../auth/access.js";
import type { H3Event } from "h3";
import type { Keyring } from "../../auth/keys.js";
import type { AppConfig } from "../../config/schema.js";
import { jsonResponse } from "../../http/json.js";
import type { Store } from "../../store/types.js";
import { responseNotFound } from "./errors.js";
import { deletedResponse, isResponseId, storedResponse, storedScope } from "./stored.js";

export function createResponseRoutes(deps: { keyring: Keyring; apps: Map<string, AppConfig>; store: Store }) {
  const scopeOf = async (event: H3Event) => {
    const key = routeKey(event);
    const app = key.appId === undefined ? undefined : deps.apps.get(key.appId);
    return app ? storedScope(app, key.name) : undefined;
  };
  const idOf = (event: H3Event) => decodeURIComponent(event.context.params?.id ?? "");
  return {
    async get(event: H3Event): Promise<Response> {
      const scope = await scopeOf(event);
      const id = idOf(event);
      const row = scope && isResponseId(id) ? await deps.store.getResponse(scope.appId, id, Date.now(), scope.keyName) : undefined;
      if (!row) throw responseNotFound();
      return jsonResponse(storedResponse(row));
    },
    async delete(event: H3Event): Promise<Response> {
      const scope = await scopeOf(event);
      const id = idOf(event);
      if (!scope || !isResponseId(id) || !(await deps.store.deleteResponse(scope.appId, id, Date.now(), scope.keyName))) throw responseNotFound();
      return jsonResponse(deletedResponse(id));
    },
  };
}
