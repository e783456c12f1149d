// The one metered pipeline (docs/architecture.md#pipeline): every kind of model request — chat,
// embeddings, the Messages and Responses dialects, rerank, audio, completions — runs these steps,
// and only the kind's spec differs. One failure path: the hold released, a usage row written once a
// channel was reached, a begun stream ended with the kind's own error event.
import type { ServerResponse } from "node:http";
import type { H3Event } from "h3";
import { missingApiKey, type Keyring } from "../auth/keys.js";
import { readJsonBody, type BodyLimits } from "../http/body.js";
import type { Cancel } from "../http/cancel.js";
import { GatewayError, UpstreamError, toGatewayError } from "../http/errors.js";
import { clientAddress } from "../http/client-address.js";
import { factsOf } from "../http/facts.js";
import { trackRequest, type Inflight } from "../http/inflight.js";
import { nodeResponse, writeToNode, type Reply } from "../http/node.js";
import type { Observer } from "../observability/observer.js";
import type { Store } from "../store/types.js";
import { withFailover } from "../upstream/failover.js";
import type { ChannelRouter } from "../upstream/router.js";
import { identifyCaller, type CallerDeps } from "./caller.js";
import { captureBodies, type BodyLogDeps } from "./body-capture.js";
import { pinnedChannel } from "./channel-pin.js";
import { Meter } from "./meter.js";
import type { Quota } from "./quota.js";
import { isStreamed, type Call, type MeteredSpec, type PlanBase, type Streamed } from "./spec.js";

export interface MeteredDeps extends CallerDeps {
  keyring: Keyring;
  body: BodyLimits;
  router: ChannelRouter;
  quota: Quota;
  observer: Observer;
  inflight: Inflight;
  store: Store;
  maxAttempts: number;
  /** proxies in front whose X-Forwarded-For is believed (server.trustProxy) */
  trustProxy: number;
  /** where the bodies of apps with `logBodies` go */
  bodyLog?: BodyLogDeps;
}

const bearer = (headers: Headers) => headers.get("authorization");

export async function runMetered<Req, Model extends { model: string }, Plan extends PlanBase, Answer>(
  event: H3Event,
  deps: MeteredDeps,
  spec: MeteredSpec<Req, Model, Plan, Answer>,
): Promise<Reply> {
  const time = Date.now();
  const started = performance.now();
  const facts = factsOf(event);

  // 1. A key, when one is sent, is checked before the body is read: a wrong key costs no parsing.
  const credential = (spec.credential ?? bearer)(event.req.headers);
  const key = credential ? await deps.keyring.authenticateFresh(credential) : undefined;
  // only a kind open to share-link users may be called without a key (their link is in the body)
  if (!key && !spec.share) throw missingApiKey();

  // the request's work stops when the client leaves, a deadline passes or the gateway shuts down
  const { cancel, untrack } = trackRequest(event, deps.inflight);
  let deadline: NodeJS.Timeout | undefined;
  let meter: Meter | undefined;
  let body: unknown;
  try {
    // 2. The body, read and validated.
    body = await readBody(event, deps, spec, cancel);
    const req = spec.parse(body);
    facts.stream = spec.streams?.(req) ?? false;

    // 3. The caller (an app key, or a share-link user where the kind admits them) and the model.
    const caller = identifyCaller(deps, key, spec.share?.(req) ?? {}, time, spec.what);
    Object.assign(facts, { appId: caller.app.id, keyName: caller.key?.name, shareId: caller.share?.link.shareId });
    const model = spec.model(req, caller);
    facts.model = model.model;
    const pinned = pinnedChannel(event, caller, deps.router, model.model);
    if (caller.app.logBodies !== "off" && deps.bodyLog) captureBodies(event, deps.bodyLog, caller.app.logBodies, requestText(body, spec), facts, time);
    const call: Call<Req, Model> = { event, req, caller, model, time, started, cancel, facts };

    // 4. The cheap refusals before any costly work (an operator's callback, a history read, token
    //    counting): every QPM window counts the request, and a budget must have room for its least.
    await deps.quota.precheck(caller.limits, spec.least?.(model) ?? 0, time);

    // 5. The kind's limits and input checks: what will be asked of the channel, at most what cost.
    const plan = await spec.prepare(call);

    // 6. Budgets: the worst case (or what is left of it) is held before the call and settled to the
    //    actual after; a plan the budgets cannot pay in full shrinks to what they hold.
    const reservation = await deps.quota.admit(caller.limits, plan.worstCase, time, { ratesCounted: true });
    meter = new Meter(deps, caller, model.model, reservation, facts, { time, started, chatId: plan.chatId, endpoint: event.url.pathname });
    const m = meter;
    await spec.afford?.(plan, call, reservation.held);

    // 7. An answer from some channel of the model; each attempt runs under its channel's total deadline.
    const { result } = await withFailover(
      deps.router,
      deps.observer,
      {
        model: model.model,
        cancel,
        maxAttempts: deps.maxAttempts,
        pinned,
        // share-link users are anonymous: one is told from another by the address they call from
        caller: caller.share ? `share:${caller.share.link.shareId}:${clientAddress(event, deps.trustProxy)}` : `key:${caller.key?.name}`,
        onAttempt: (entry) => {
          m.channel = facts.channel = entry.config.name;
          m.channelId = entry.config.id ?? null;
          facts.attempts = (facts.attempts ?? 0) + 1;
          clearTimeout(deadline);
          deadline = setTimeout(() => cancel.abort("timeout"), entry.config.totalTimeoutMs);
        },
      },
      (client) => spec.attempt(client, plan, call),
    );

    // 8. The answer in the kind's shape: whole (settled before it is returned) or streamed.
    const answer = await spec.respond(result, plan, call, meter);
    return isStreamed(answer) ? await stream(event, answer, meter, cancel) : answer;
  } catch (err) {
    // 9. The failure path: nothing generated reached the client.
    if (err instanceof UpstreamError && err.detail) facts.upstreamMessage = err.detail;
    const error = toGatewayError(err);
    await meter?.fail(error.status, error);
    throw err;
  } finally {
    clearTimeout(deadline);
    untrack();
    if (body !== undefined) await spec.release?.(body);
  }
}

/** The request as received, for a log's detail: its JSON, or what the kind says an upload was. */
function requestText(body: unknown, spec: { logged?: (body: unknown) => string }): string {
  return spec.logged ? spec.logged(body) : JSON.stringify(body);
}

function readBody(event: H3Event, deps: MeteredDeps, spec: Pick<MeteredSpec<never, never, never, never>, "read" | "rawTexts">, cancel: Cancel): Promise<unknown> {
  const done = deps.inflight.reading(cancel);
  const read = spec.read ? spec.read(event, deps.body, cancel) : readJsonBody(event, deps.body, cancel, spec.rawTexts === true);
  return read.finally(done);
}

/** A streamed answer: its head, its body, and — should the body fail after the head was written —
 *  the kind's error event (unless the client is the one who left), the request settled either way. */
async function stream(event: H3Event, answer: Streamed, meter: Meter, cancel: Cancel): Promise<Reply> {
  if (!nodeResponse(event)) throw new GatewayError(500, "stream_unsupported", "Streaming needs the Node server adapter.", { type: "server_error" });
  const facts = factsOf(event);
  return writeToNode(event, async (res: ServerResponse) => {
    res.writeHead(200, answer.headers); // x-request-id and CORS: set on the response by the route wrapper
    try {
      await answer.pump(res);
    } catch (err) {
      const error = toGatewayError(err);
      if (err instanceof UpstreamError && err.detail) facts.upstreamMessage = err.detail;
      facts.errorCode = error.code;
      await meter.fail(error.status, error);
      if (cancel.reason !== "client_abort" && !res.destroyed) res.write(answer.error(error));
    }
  });
}
