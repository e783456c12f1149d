// Which configured model a batch line's `body.model` stands for, if the app may use it for the
// batch's endpoint (docs/batches.md#input-lines): the same resolution as the line's call makes
// (src/metered/models.ts), so a line that validates is one its kind accepts.
import type { AppConfig } from "../config/schema.js";
import { appAllows, appAllowsTool, resolveModel, type Aliases } from "../metered/models.js";

export interface BatchModelDeps {
  chat: Map<string, unknown>;
  embeddings: Map<string, unknown>;
  aliases: Aliases;
  apps: Map<string, AppConfig>;
  serves: (model: string) => boolean;
}

export function batchModelOf(deps: BatchModelDeps) {
  return (appId: string, endpoint: string, name: string): string | undefined => {
    const app = deps.apps.get(appId);
    if (!app) return undefined;
    const embeddings = endpoint === "/v1/embeddings";
    const models = embeddings ? deps.embeddings : deps.chat;
    try {
      resolveModel(models, deps.aliases, name, (m) => (embeddings ? appAllowsTool(app, m) : appAllows(app, m)), deps.serves);
    } catch {
      return undefined;
    }
    return models.has(name) ? name : deps.aliases.resolve(name);
  };
}
