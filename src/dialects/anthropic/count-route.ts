// POST /v1/messages/count_tokens (docs/claude-code.md#count-tokens): a Messages body's input tokens,
// counted with the tokenizer of the model it names (aliases resolved, the app's models only) — no
// upstream call, nothing held or billed. Keys and the body limits are the chat path's, and so are
// the QPM windows: counting costs the gateway CPU, so a key cannot ask without limit.
import type { H3Event } from "h3";
import { asBearer } from "../../chat/dialect.js";
import type { ModelConfig } from "../../config/schema.js";
import type { BodyLimits } from "../../http/body.js";
import { readJsonBody } from "../../http/body.js";
import { factsOf } from "../../http/facts.js";
import { jsonResponse } from "../../http/json.js";
import { identifyCaller, type CallerDeps } from "../../metered/caller.js";
import { appAllows, resolveModel, type Aliases } from "../../metered/models.js";
import type { Quota } from "../../metered/quota.js";
import { countInputTokens, toCountChat } from "./count-tokens.js";
import { readAnthropicKey } from "./dialect.js";

export interface CountRouteDeps extends CallerDeps {
  models: Map<string, ModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
  body: BodyLimits;
  quota: Quota;
}

export function createCountTokensRoute(deps: CountRouteDeps) {
  return async function countTokens(event: H3Event): Promise<Response> {
    const now = Date.now();
    const key = await deps.keyring.authenticateFresh(asBearer(readAnthropicKey(event.req.headers)));
    const caller = identifyCaller(deps, key, {}, now, "Counting tokens");
    Object.assign(factsOf(event), { appId: caller.app.id, keyName: key.name });
    await deps.quota.precheck(caller.limits, 0, now);
    const { chat, ctx } = toCountChat(await readJsonBody(event, deps.body, undefined, true));
    const model = resolveModel(deps.models, deps.aliases, ctx.model, (m) => appAllows(caller.app, m), deps.serves);
    factsOf(event).model = model.model;
    return jsonResponse({ input_tokens: await countInputTokens(chat, model) });
  };
}
