// Chat completions as a spec of the metered pipeline (docs/api.md#chat): OpenAI's body plus
// FastGPT's conversations, variables, detail reports and share-link users; the model's limits; one
// attempt posts the limited body; the answer is the upstream's, whole or relayed as it streams.
import type { ModelConfig } from "../config/schema.js";
import { shareFields } from "../metered/caller.js";
import { appAllows, resolveModel, type Aliases } from "../metered/models.js";
import type { MeteredSpec } from "../metered/spec.js";
import { wholeOrStream } from "../stream/answer.js";
import { computePoints } from "../tokens/points.js";
import { attemptChat, type ChatAnswer } from "./attempt.js";
import { affordChat, planChat, type ChatPlan, type PlanDeps } from "./plan.js";
import { parseChatRequest, type ChatRequest } from "./request-schema.js";
import { respondJson } from "./respond-json.js";
import { completionAsSse, streamChat } from "./respond-stream.js";
import type { SettleDeps } from "./settle.js";

export interface ChatSpecDeps extends PlanDeps, SettleDeps {
  models: Map<string, ModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
}

export function createChatSpec(deps: ChatSpecDeps): MeteredSpec<ChatRequest, ModelConfig, ChatPlan, ChatAnswer> {
  return {
    what: "Chat",
    rawTexts: true,
    parse: ({ body }) => parseChatRequest(body),
    streams: (req) => req.stream === true,
    share: shareFields,
    // absent: the app's default model, which is also the only one a share link's users chat with
    model: (req, caller) => resolveModel(deps.models, deps.aliases, (!caller.share && req.model) || caller.app.model, (m) => appAllows(caller.app, m), deps.serves),
    least: (model) => computePoints(model, 0, 1),
    prepare: (call) => planChat(deps, call),
    afford: (plan, call, held) => affordChat(plan, call.model, held),
    affinity: (plan, call) => ({
      session: call.req.prompt_cache_key,
      chatId: plan.chatId,
      shareUid: "uid" in plan.owner ? plan.owner.uid : undefined,
      user: plan.req.user ?? call.req.safety_identifier,
      prompt: plan.limited.messages,
      tools: plan.req.tools,
    }),
    attempt: attemptChat,
    respond: async (answer, plan, call) =>
      wholeOrStream(answer, plan.stream, {
        whole: (completion) => respondJson(deps, call, plan, completion),
        stream: (body, maxBytes) => streamChat(deps, call, plan, body, maxBytes),
        asSse: completionAsSse,
      }),
  };
}
