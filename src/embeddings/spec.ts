// POST /v1/embeddings and /api/v1/embeddings as a spec of the metered pipeline (docs/api.md#embeddings):
// an app key's request for vectors of one of its vector models. The answer is the upstream's bytes
// with `usage` forced (./answer.ts): its vectors are never parsed.
import type { VectorModelConfig } from "../config/schema.js";
import { jsonBody } from "../json/raw-text.js";
import type { Caller } from "../metered/caller.js";
import { appAllowsTool, resolveModel, type Aliases } from "../metered/models.js";
import { budgeted, type WorstCase } from "../metered/quota.js";
import type { MeteredSpec, PlanBase } from "../metered/spec.js";
import { computePoints } from "../tokens/points.js";
import { badUpstreamReply } from "../upstream/errors.js";
import { withoutClientPriority } from "../upstream/forward-priority.js";
import { readReply } from "../upstream/read.js";
import { answerModel, scanEmbeddings, withUsage, type EmbeddingsAnswer } from "./answer.js";
import { checkInputs, countInputs } from "./limits.js";
import { inputItems, parseEmbeddingsRequest, type EmbeddingInput, type EmbeddingsRequest } from "./request-schema.js";

interface EmbeddingsPlan extends PlanBase {
  body: string | Buffer;
  inputs: number;
  /** the inputs' tokens, counted the first time they are asked for */
  tokens: () => Promise<number>;
}

export interface EmbeddingsSpecDeps {
  vectorModels: Map<string, VectorModelConfig>;
  aliases: Aliases;
  serves: (model: string) => boolean;
}

export function createEmbeddingsSpec(deps: EmbeddingsSpecDeps): MeteredSpec<EmbeddingsRequest, VectorModelConfig, EmbeddingsPlan, EmbeddingsAnswer> {
  return {
    what: "Embeddings",
    parse: ({ body }) => parseEmbeddingsRequest(body),
    // an app with `models` may use the vector models listed there; one without may use every one
    model: (req, caller) => resolveModel(deps.vectorModels, deps.aliases, req.model, (m) => appAllowsTool(caller.app, m), deps.serves, "embedding model"),
    async prepare({ req, caller, model }) {
      // every input within maxToken, most proven by their bytes alone (counted once, when needed)
      const bound = await checkInputs(req.input, model);
      const tokens = countOnce(req.input);
      // the client's other fields pass through, its `priority` never (docs/routing.md#priority-and-fairness)
      return { body: jsonBody(withoutClientPriority({ ...req, model: model.model })), inputs: inputItems(req.input).length, tokens, worstCase: worstCase(caller, model, bound, tokens) };
    },
    async attempt(client, plan, { model, cancel }) {
      const reply = await client.post({ path: "/embeddings", body: plan.body, signal: cancel, model: model.model });
      // the vectors are passed on as bytes: only the answer's top level is read (./answer.ts)
      const answer = scanEmbeddings(await readReply(reply, model.model), plan.inputs);
      if (!answer) throw badUpstreamReply(model.model);
      return answer;
    },
    async respond(answer, plan, { inbound, model }) {
      // tokens: the upstream's usage, else counted
      const inputTokens = answer.promptTokens ?? (await plan.tokens());
      const used = { inputTokens, points: computePoints(model, inputTokens, 0), responseModel: answerModel(answer) };
      return { used, reply: () => inbound.jsonParts(withUsage(answer, inputTokens, model.model)) };
    },
  };
}

function countOnce(input: EmbeddingInput): () => Promise<number> {
  let counted: Promise<number> | undefined;
  return () => (counted ??= countInputs(input));
}

/** The most the input can cost: its bound, or its count when a budget cannot hold the bound. */
function worstCase(caller: Caller, model: VectorModelConfig, bound: number, tokens: () => Promise<number>): WorstCase | number {
  if (!budgeted(caller.limits, { tokens: true })) return 0;
  return {
    bound: computePoints(model, bound, 0),
    tokens: { bound },
    counted: async () => {
      const counted = await tokens();
      return { most: computePoints(model, counted, 0), tokens: { most: counted } };
    },
  };
}
