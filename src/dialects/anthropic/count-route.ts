// POST /v1/messages/count_tokens (docs/claude-code.md#count-tokens): a Messages body's input tokens,
// counted with the tokenizer of the model it names (aliases resolved, the app's models only) — no
// upstream call, nothing held or billed: the pipeline's unmetered mode. Keys and the body limits are
// the chat path's, and so are the QPM windows: counting costs the gateway CPU, so a key cannot ask
// without limit.
import { asBearer } from "../../chat/dialect.js";
import type { ChatRequest } from "../../chat/request-schema.js";
import type { ModelConfig } from "../../config/schema.js";
import { factsOf } from "../../http/facts.js";
import { jsonResponse } from "../../http/json.js";
import type { LocalSpec } from "../../metered/local.js";
import { appAllows, resolveModel, type Aliases } from "../../metered/models.js";
import { countInputTokens } from "./count-tokens.js";
import { readAnthropicKey } from "./dialect.js";
import { parseCountTokensRequest, type CountTokensRequest } from "./request-schema.js";
import { openThread, type ThreadDeps } from "./thread.js";
import { buildChat } from "./to-chat.js";

export interface CountTokensDeps {
  models: Map<string, ModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
  /** a thread's `continue` is counted with the conversation it continues */
  threads: Pick<ThreadDeps, "store" | "clock">;
}

export function createCountTokensSpec(deps: CountTokensDeps): LocalSpec<CountTokensRequest, Response> {
  return {
    what: "Counting tokens",
    credential: (headers) => asBearer(readAnthropicKey(headers)),
    rawTexts: true,
    parse: ({ body }) => parseCountTokensRequest(body),
    async answer({ event, req, caller }) {
      const model = resolveModel(deps.models, deps.aliases, req.model, (m) => appAllows(caller!.app, m), deps.serves);
      factsOf(event).model = model.model;
      const { chat } = buildChat((await openThread(deps.threads, req, caller!)).req);
      return jsonResponse({ input_tokens: await countInputTokens(chat, model) });
    },
  };
}
