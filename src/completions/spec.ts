// POST /v1/completions and /api/v1/completions as a spec of the metered pipeline
// (docs/fleet.md#completions): the legacy completions autocomplete and fill-in-the-middle tools send,
// for chat models marked `completions: true`. Limits and reservation as chat (serve until spent: a
// budget that holds less than the worst case lowers max_tokens); the answer is the upstream's, whole
// or relayed as it streams.
import type { ModelConfig } from "../config/schema.js";
import { jsonResponse } from "../http/json.js";
import { appAllows, resolveModel, type Aliases } from "../metered/models.js";
import type { Held } from "../metered/quota.js";
import type { MeteredSpec } from "../metered/spec.js";
import { wholeOrStream, type SseAnswer } from "../stream/answer.js";
import { affordedMaxTokens, tokenWorstCase, type TokenAsk } from "../metered/token-budget.js";
import { computePoints } from "../tokens/points.js";
import { contentTypeOf, readJsonReply } from "../upstream/read.js";
import { completionAnswer, readTextCompletion, type TextCompletion } from "./answer.js";
import { applyCompletionLimits, upstreamBody, type LimitedCompletion } from "./limits.js";
import { parseCompletionsRequest, type CompletionsRequest } from "./request-schema.js";
import { completionAsSse, streamCompletion } from "./respond-stream.js";
import { completionUsed, type CompletionsPlan } from "./settle.js";

type CompletionsAnswer = SseAnswer<TextCompletion>;

export interface CompletionsSpecDeps {
  models: Map<string, ModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
}

const isTextCompletion = (v: unknown): v is TextCompletion => readTextCompletion(v) !== undefined;

export function createCompletionsSpec(deps: CompletionsSpecDeps): MeteredSpec<CompletionsRequest, ModelConfig, CompletionsPlan, CompletionsAnswer> {
  // only the chat models the operator marked: most chat servers have no legacy endpoint
  const served = new Map([...deps.models].filter(([, m]) => m.completions));
  return {
    what: "Completions",
    rawTexts: true,
    parse: ({ body }) => parseCompletionsRequest(body),
    streams: (req) => req.stream === true,
    model: (req, caller) => resolveModel(served, deps.aliases, req.model, (m) => appAllows(caller.app, m), deps.serves, "completions model"),
    least: (model) => computePoints(model, 0, 1),
    async prepare({ req, caller, model }) {
      const limited = await applyCompletionLimits(req, model);
      return {
        limited,
        body: JSON.stringify(limited.body),
        stream: req.stream === true,
        includeUsage: req.stream_options?.include_usage === true,
        worstCase: tokenWorstCase(caller, model, askOf(limited)),
      };
    },
    afford: (plan, call, held) => affordCompletion(plan, call.req, call.model, held),
    affinity: (_plan, { req }) => ({ session: req.prompt_cache_key, user: req.user ?? req.safety_identifier, prompt: promptText(req.prompt) }),
    async attempt(client, plan, { model, cancel }) {
      const reply = await client.post({ path: "/completions", body: plan.body, signal: cancel, model: model.model });
      if (plan.stream && contentTypeOf(reply).includes("text/event-stream")) return { kind: "stream", body: reply.body, maxBytes: reply.maxBytes };
      return { kind: "json", completion: await readJsonReply(reply, model.model, isTextCompletion) };
    },
    respond: async (answer, plan, call) =>
      wholeOrStream(answer, plan.stream, {
        async whole(completion) {
          const texts = () => completion.choices.map((c) => c.text);
          const { used, usage } = await completionUsed(call, plan, { texts, usage: completion.usage, finishReason: completion.choices[0]?.finish_reason ?? "stop" });
          return { used, reply: () => jsonResponse(completionAnswer(completion, call.req.model, usage)) };
        },
        stream: (body, maxBytes) => streamCompletion(call, plan, body, maxBytes),
        asSse: completionAsSse,
      }),
  };
}

/** What serve-until-spent needs of the request: every prompt, then max_tokens for every generation. */
const askOf = (limited: LimitedCompletion): TokenAsk => ({
  promptBound: limited.promptBound,
  countPrompt: () => limited.countPrompt(),
  answers: limited.generations,
  maxTokens: limited.maxTokens,
});

/** Serve until spent, as chat does: a smaller hold lowers max_tokens, and the body with it. */
async function affordCompletion(plan: CompletionsPlan, req: CompletionsRequest, model: ModelConfig, held: Held): Promise<void> {
  const { limited } = plan;
  const maxTokens = await affordedMaxTokens(model, askOf(limited), held);
  if (maxTokens === undefined) return;
  limited.maxTokens = maxTokens;
  limited.outputBound = limited.generations * maxTokens;
  plan.body = JSON.stringify(upstreamBody(req, model, limited.maxTokens, limited.temperature));
}

/** The prompt's start as text, for the fingerprint: the first prompt of several; token ids as numbers. */
function promptText(prompt: CompletionsRequest["prompt"]): string {
  const first = Array.isArray(prompt) && typeof prompt[0] !== "number" ? prompt[0] : prompt;
  return typeof first === "string" ? first : Array.isArray(first) ? first.slice(0, 16_384).join(",") : "";
}
