// Chat completions as a spec of the metered pipeline (docs/api.md#chat): OpenAI's body plus
// FastGPT's conversations, variables, detail reports and share-link users; the model's limits; one
// attempt posts the limited body; the answer is the upstream's, whole or relayed as it streams.
import type { ModelConfig } from "../config/schema.js";
import type { Aliases } from "../metered/models.js";
import { appAllows, resolveModel } from "../metered/models.js";
import type { MeteredSpec } from "../metered/spec.js";
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
    parse: parseChatRequest,
    streams: (req) => req.stream === true,
    share: (req) => req,
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
    }),
    attempt: attemptChat,
    async respond(answer, plan, call, meter) {
      // a whole answer was read whole by the attempt (attemptChat)
      if (answer.kind === "json" && !plan.stream) return respondJson(deps, call, plan, meter, answer.completion);
      const body = answer.kind === "stream" ? answer.body : completionAsSse(answer.completion);
      return streamChat(deps, call, plan, meter, body, answer.kind === "stream" ? answer.maxBytes : Number.POSITIVE_INFINITY);
    },
  };
}
