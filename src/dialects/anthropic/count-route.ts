// POST /v1/messages/count_tokens (docs/claude-code.md#count-tokens): a Messages body's input tokens,
// counted with the tokenizer of the model it names (aliases resolved, the app's models only) — no
// upstream call, nothing held or billed. Keys and the body limits are the chat path's.
import type { H3Event } from "h3";
import type { Keyring } from "../../auth/keys.js";
import type { ModelConfig } from "../../config/schema.js";
import type { BodyLimits } from "../../http/body.js";
import { readJsonBody } from "../../http/body.js";
import { GatewayError } from "../../http/errors.js";
import { factsOf } from "../../http/facts.js";
import { jsonResponse } from "../../http/json.js";
import { appAllows, resolveModel, type Aliases } from "../../metered/models.js";
import type { AppConfig } from "../../config/schema.js";
import { countInputTokens, toCountChat } from "./count-tokens.js";
import { readAnthropicKey } from "./dialect.js";
import { asBearer } from "../../chat/dialect.js";

export interface CountRouteDeps {
  keyring: Keyring;
  apps: Map<string, AppConfig>;
  models: Map<string, ModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
  body: BodyLimits;
}

export function createCountTokensRoute(deps: CountRouteDeps) {
  return async function countTokens(event: H3Event): Promise<Response> {
    const key = await deps.keyring.authenticateFresh(asBearer(readAnthropicKey(event.req.headers)));
    const app = key.appId ? deps.apps.get(key.appId) : undefined;
    if (!app) throw new GatewayError(403, "app_key_required", "Counting tokens needs an application key: this is a global key.");
    const { chat, ctx } = toCountChat(await readJsonBody(event, deps.body, undefined, true));
    const model = resolveModel(deps.models, deps.aliases, ctx.model, (m) => appAllows(app, m), deps.serves);
    Object.assign(factsOf(event), { appId: app.id, keyName: key.name, model: model.model });
    return jsonResponse({ input_tokens: await countInputTokens(chat, model.tokenizer) });
  };
}
