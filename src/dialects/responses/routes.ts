// GET and DELETE /v1/responses/{id} (docs/codex.md#store-and-previous_response_id): a stored response,
// for the app that made it only (404 for any other, as for one missing or expired).
import type { H3Event } from "h3";
import type { Keyring } from "../../auth/keys.js";
import { jsonResponse } from "../../http/json.js";
import type { Store } from "../../store/types.js";
import { responseNotFound } from "./errors.js";
import { deletedResponse, storedResponse } from "./stored.js";

export function createResponseRoutes(deps: { keyring: Keyring; store: Store }) {
  const appOf = async (event: H3Event) => (await deps.keyring.authenticateFresh(event.req.headers.get("authorization"))).appId;
  const idOf = (event: H3Event) => decodeURIComponent(event.context.params?.id ?? "");
  return {
    async get(event: H3Event): Promise<Response> {
      const appId = await appOf(event);
      const row = appId ? await deps.store.getResponse(appId, idOf(event), Date.now()) : undefined;
      if (!row) throw responseNotFound();
      return jsonResponse(storedResponse(row));
    },
    async delete(event: H3Event): Promise<Response> {
      const appId = await appOf(event);
      const id = idOf(event);
      if (!appId || !(await deps.store.deleteResponse(appId, id, Date.now()))) throw responseNotFound();
      return jsonResponse(deletedResponse(id));
    },
  };
}
