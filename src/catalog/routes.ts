// GET /v1/models and /v1/models/{id} (docs/api.md#models): what a key may use, as OpenAI model
// objects with the kind each serves (`sluice_kind`: chat, embeddings, rerank, speech, transcription;
// chat models that also serve /v1/completions say `completions: true`), then the aliases the key may
// use (`sluice_alias_of`: the model it stands for). Any valid key may ask; an app key sees what its
// app may use (docs/fleet.md#apps), a global or admin key everything.
import { routeKey } from "../auth/access.js";
import type { H3Event } from "h3";
import type { KeyIdentity, Keyring } from "../auth/keys.js";
import { fleetModels, type FleetConfig, type ModelKind } from "../config/fleet.js";
import type { AppConfig } from "../config/schema.js";
import { notFound } from "../http/errors.js";
import { jsonResponse } from "../http/json.js";
import { MAX_MODEL_NAME } from "../http/validation.js";
import { appAllows, appAllowsListed, appAllowsTool, type Aliases } from "../metered/models.js";

export interface CatalogDeps {
  keyring: Keyring;
  config: FleetConfig;
  /** every configured model's kind, in the config's order */
  kinds: Map<string, ModelKind>;
  aliases: Aliases;
  apps: Map<string, AppConfig>;
}

interface ModelObject {
  id: string;
  object: "model";
  created: number;
  owned_by: "sluice";
  name: string;
  sluice_kind: ModelKind;
  completions?: true;
  sluice_alias_of?: string;
}

export function createCatalogRoutes(deps: CatalogDeps) {
  const created = Math.floor(Date.now() / 1000);
  const { config } = deps;
  const names = new Map<string, string | undefined>();
  const completions = new Set(config.llmModels.filter((m) => m.completions).map((m) => m.model));
  for (const m of Object.values(fleetModels(config)).flat()) names.set(m.model, m.name);

  const modelObject = (model: string, id = model): ModelObject => ({
    id,
    object: "model",
    created,
    owned_by: "sluice",
    name: names.get(model) ?? model,
    sluice_kind: deps.kinds.get(model)!,
    ...(completions.has(model) ? { completions: true as const } : {}),
    ...(id !== model ? { sluice_alias_of: model } : {}),
  });

  /** May the key use this configured model? Its app's models (none when a reload removed the app
   *  of a created key), or every model for a global or admin key. */
  function allows(key: KeyIdentity): (model: string) => boolean {
    if (!key.appId) return (model) => deps.kinds.has(model);
    const app = deps.apps.get(key.appId);
    if (!app) return () => false;
    return (model) => {
      const kind = deps.kinds.get(model);
      if (kind === "chat") return appAllows(app, model);
      return kind === "embeddings" ? appAllowsTool(app, model) : kind !== undefined && appAllowsListed(app, model);
    };
  }

  async function models(event: H3Event): Promise<Response> {
    const may = allows(routeKey(event));
    const data = [...deps.kinds.keys()].filter(may).map((m) => modelObject(m));
    for (const alias of deps.aliases.names) {
      const target = deps.aliases.resolve(alias);
      if (target !== undefined && deps.kinds.has(target) && may(target)) data.push(modelObject(target, alias));
    }
    return jsonResponse({ object: "list", data });
  }

  async function model(event: H3Event): Promise<Response> {
    const may = allows(routeKey(event));
    const id = decodeURIComponent(event.context.params?.id ?? "");
    // no model has a longer name: not looked up
    const target = id.length > MAX_MODEL_NAME ? undefined : deps.kinds.has(id) ? id : deps.aliases.resolve(id);
    if (target === undefined || !deps.kinds.has(target) || !may(target)) {
      throw notFound("model_not_found", `The model ${JSON.stringify(id.slice(0, 100))} does not exist or this key may not use it.`);
    }
    return jsonResponse(modelObject(target, id));
  }

  return { models, model };
}
