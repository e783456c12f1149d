// GET /v1/models and /v1/models/{id} (docs/api.md#models): what a key may use, as OpenAI model
// objects. Any valid key may ask; an app key sees its app's models, a global or admin key every one.
import type { H3Event } from "h3";
import type { KeyIdentity, Keyring } from "../auth/keys.js";
import type { AppConfig, ModelConfig } from "../config/schema.js";
import { notFound } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";

export interface CatalogDeps {
  keyring: Keyring;
  models: Map<string, ModelConfig>;
  apps: Map<string, AppConfig>;
}

export function createCatalogRoutes(deps: CatalogDeps) {
  const created = Math.floor(Date.now() / 1000);
  const authenticate = (event: H3Event) => deps.keyring.authenticate(event.req.headers.get("authorization"));
  const modelObject = (id: string) => ({ id, object: "model", created, owned_by: "sluice", name: deps.models.get(id)?.name ?? id });
  /** The models a key may use: its app's (none when a reload removed the app of a created key), or
   *  every model for a global or admin key. */
  const usable = (key: KeyIdentity) => {
    if (!key.appId) return [...deps.models.keys()];
    const app = deps.apps.get(key.appId);
    return app ? (app.models ?? [app.model]) : [];
  };

  async function models(event: H3Event): Promise<Response> {
    return jsonResponse({ object: "list", data: usable(authenticate(event)).map(modelObject) });
  }

  async function model(event: H3Event): Promise<Response> {
    const key = authenticate(event);
    const id = decodeURIComponent(event.context.params?.id ?? "");
    if (!usable(key).includes(id)) throw notFound("model_not_found", `The model ${JSON.stringify(id.slice(0, 100))} does not exist or this key may not use it.`);
    return jsonResponse(modelObject(id));
  }

  return { models, model };
}
