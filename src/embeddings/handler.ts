// POST /v1/embeddings and /api/v1/embeddings (CONTRACTS §13): an app key's request for vectors of
// one of its vector models, answered by some channel of that model. Keys, budgets, rates, failover,
// usage rows and points work as for chat; the answer is the upstream's bytes with `usage` forced
// (./answer.ts): its vectors are never parsed.
import type { H3Event } from "h3";
import type { AppConfig, VectorModelConfig } from "../config/schema.js";
import { identifyCaller, type Caller, type CallerDeps } from "../chat/caller.js";
import type { Quota, Reservation, WorstCase } from "../chat/quota.js";
import { readJsonBody, type BodyLimits } from "../http/body.js";
import { GatewayError, notFound } from "../http/errors.js";
import { factsOf } from "../http/facts.js";
import { trackRequest, type Inflight } from "../http/inflight.js";
import type { HANDLED } from "../http/facts.js";
import { sendJsonParts } from "../http/json.js";
import type { Observer } from "../observability/observer.js";
import type { Store } from "../store/types.js";
import { computePoints } from "../tokens/points.js";
import { UpstreamError } from "../upstream/errors.js";
import { withFailover } from "../upstream/failover.js";
import type { ChannelRouter } from "../upstream/router.js";
import { withUsage } from "./answer.js";
import { checkInputs, countInputs } from "./limits.js";
import { parseEmbeddingsRequest, type EmbeddingInput } from "./request-schema.js";

export interface EmbeddingsDeps extends CallerDeps {
  body: BodyLimits;
  vectorModels: Map<string, VectorModelConfig>;
  router: ChannelRouter;
  quota: Quota;
  observer: Observer;
  inflight: Inflight;
  store: Store;
  maxAttempts: number;
}

/** What a usage row needs to know about the request. */
interface Metering {
  caller: Caller;
  model: VectorModelConfig;
  channel: string;
  time: number;
  started: number;
}

export function createEmbeddingsHandler(deps: EmbeddingsDeps) {
  return async function handleEmbeddings(event: H3Event): Promise<Response | typeof HANDLED> {
    const time = Date.now();
    const started = performance.now();
    const facts = factsOf(event);
    facts.stream = false;

    // 1. A key, when one is sent, is checked before the body is read.
    const authorization = event.req.headers.get("authorization");
    const key = authorization ? await deps.keyring.authenticateFresh(authorization) : undefined;

    // the request's work stops when the client leaves, a deadline passes or the gateway shuts down
    const { cancel, untrack } = trackRequest(event, deps.inflight);

    let deadline: NodeJS.Timeout | undefined;
    let reservation: Reservation | undefined;
    let metering: Metering | undefined;
    try {
      // 2. The body, validated.
      const req = parseEmbeddingsRequest(await readJsonBody(event, deps.body, cancel));

      // 3. The caller (app keys only: share links chat, they do not embed), its app and the model.
      const caller = identifyCaller(deps, key, {}, time, "Embeddings");
      Object.assign(facts, { appId: caller.app.id, keyName: caller.key?.name });
      const model = resolveVectorModel(deps.vectorModels, caller.app, req.model, deps.router.serves);
      facts.model = model.model;

      // 4. Every input within maxToken, most proven by their bytes alone (counted once, when needed).
      const bound = await checkInputs(req.input, model);
      const tokens = countOnce(req.input);

      // 5. Budgets and rates: the input's points are held until the answer settles them.
      reservation = await deps.quota.admit(caller.limits, worstCase(caller, model, bound, tokens), time);

      // 6. Vectors from some channel of the model; each attempt runs under its channel's total deadline.
      const m: Metering = (metering = { caller, model, channel: "", time, started });
      const { result: answer } = await withFailover(
        deps.router,
        deps.observer,
        {
          model: model.model,
          cancel,
          maxAttempts: deps.maxAttempts,
          onAttempt: (entry) => {
            m.channel = facts.channel = entry.config.name;
            clearTimeout(deadline);
            deadline = setTimeout(() => cancel.abort("timeout"), entry.config.totalTimeoutMs);
          },
        },
        (client) => client.embed({ body: { ...req, model: model.model }, signal: cancel }),
      );
      deps.observer.upstreamFinished(m.channel, model.model, "ok");

      // 7. Tokens (the upstream's usage, else counted), points, the usage row, then the answer.
      const inputTokens = answer.promptTokens ?? (await tokens());
      const points = computePoints(model, inputTokens, 0);
      await recordUsage(deps.store, m, 200, inputTokens, points);
      reservation.settle(points);
      Object.assign(facts, { inputTokens, points });
      return sendJsonParts(event, withUsage(answer, inputTokens, model.model));
    } catch (err) {
      if (err instanceof UpstreamError && err.detail) facts.upstreamMessage = err.detail;
      reservation?.release();
      // a request that reached a channel leaves a usage row with its status, as chat does
      if (metering?.channel) {
        const status = err instanceof GatewayError ? err.status : 500;
        await recordUsage(deps.store, metering, status, 0, 0).catch(() => {});
      }
      throw err;
    } finally {
      clearTimeout(deadline);
      untrack();
    }
  };
}

/** The vector model named by the request; 404 when the app may not use it. An app with `models`
 *  may use the vector models listed there; one without may use every vector model (CONTRACTS §7). */
function resolveVectorModel(models: Map<string, VectorModelConfig>, app: AppConfig, name: string, serves: (m: string) => boolean): VectorModelConfig {
  const model = models.get(name);
  if (!model || (app.models && !app.models.includes(name)) || !serves(name)) {
    throw notFound("model_not_found", `The embedding model ${JSON.stringify(name.slice(0, 100))} does not exist or this app may not use it.`);
  }
  return model;
}

/** The inputs' tokens, counted the first time they are asked for. */
function countOnce(input: EmbeddingInput): () => Promise<number> {
  let counted: Promise<number> | undefined;
  return () => (counted ??= countInputs(input));
}

/** The most the input can cost: its bound, or its count when a budget cannot hold the bound. */
function worstCase(caller: Caller, model: VectorModelConfig, bound: number, tokens: () => Promise<number>): WorstCase | number {
  if (!caller.limits.some((l) => l.maxUsagePoints >= 0)) return 0;
  return { bound: computePoints(model, bound, 0), counted: async () => computePoints(model, await tokens(), 0) };
}

function recordUsage(store: Store, m: Metering, status: number, inputTokens: number, points: number): Promise<void> {
  return store.recordUsage(
    {
      time: m.time,
      appId: m.caller.app.id,
      keyName: m.caller.key?.name ?? null,
      shareId: null,
      model: m.model.model,
      channel: m.channel,
      inputTokens,
      outputTokens: 0,
      points,
      status,
      durationMs: Math.round(performance.now() - m.started),
      chatId: null,
      finishReason: null,
    },
    m.caller.limits.map((l) => l.scope),
  );
}
