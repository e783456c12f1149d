// The one metered pipeline (docs/architecture.md#pipeline): every kind of model request — chat,
// embeddings, the Messages and Responses dialects, rerank, audio, completions — runs these steps,
// and only the kind's spec differs. One failure path: the hold released, a usage row written once a
// channel was reached, a begun stream ended with the kind's own error event.
import type { H3Event } from "h3";
import { missingApiKey, type Keyring, type KeyIdentity } from "../auth/keys.js";
import { readJsonBody, type BodyLimits } from "../http/body.js";
import { releaseRawTexts } from "../http/raw-text.js";
import type { Cancel } from "../http/cancel.js";
import { GatewayError, toGatewayError } from "../http/errors.js";
import { UpstreamError } from "../upstream/errors.js";
import { clientAddress } from "../http/client-address.js";
import { factsOf, type RequestFacts } from "../http/facts.js";
import { trackRequest, type Inflight } from "../http/inflight.js";
import type { Reply } from "../http/node.js";
import type { Observer } from "../observability/observer.js";
import type { Store } from "../store/types.js";
import { withFailover } from "../upstream/failover.js";
import type { ChannelRouter } from "../upstream/router.js";
import type { ClusterState } from "../cluster/types.js";
import { endUser, identifyCaller, mayNameShareLink, type Caller, type CallerDeps, type ShareFields } from "./caller.js";
import { takeSlots, type FreeSlots } from "./concurrency.js";
import { captureBodies, type BodyLogDeps } from "./body-capture.js";
import { pinnedChannel } from "./channel-pin.js";
import { affinityKey } from "./affinity.js";
import { prefixParts } from "./prefix.js";
import { Meter } from "./meter.js";
import type { Quota } from "./quota.js";
import { answer } from "./respond.js";
import { requestParts, type Call, type Judge, type MeteredSpec, type PlanBase } from "./spec.js";

export interface MeteredDeps extends CallerDeps {
  keyring: Keyring;
  body: BodyLimits;
  router: ChannelRouter;
  quota: Quota;
  observer: Observer;
  inflight: Inflight;
  store: Store;
  /** the shared state of the caps on calls in flight */
  state: ClusterState;
  maxAttempts: number;
  /** proxies in front whose X-Forwarded-For is believed (server.trustProxy) */
  trustProxy: number;
  /** where the bodies of apps with `logBodies` go */
  bodyLog?: BodyLogDeps;
  /** epoch ms now: the moment quotas by time are judged at */
  clock: () => number;
}

const bearer = (headers: Headers) => headers.get("authorization");

export async function runMetered<Req, Model extends { model: string }, Plan extends PlanBase, Answer, Body>(
  event: H3Event,
  deps: MeteredDeps,
  spec: MeteredSpec<Req, Model, Plan, Answer, Body>,
): Promise<Reply> {
  const time = deps.clock();
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
  let freeSlots: FreeSlots | undefined;
  let body: Body | undefined;
  try {
    // 2. The body, read; without a key, one that names no share link is not even parsed. An upload's
    //    reader judges steps 3 and 4 before it stores the file (`judge`): a caller who would be
    //    refused costs no disk.
    let prechecked = false;
    const judge: Judge<Model> = async (pick) => {
      const caller = identify(deps, key, {}, time, spec.what, facts);
      const model = pick?.(caller);
      await deps.quota.precheck(caller.limits, model ? (spec.least?.(model) ?? 0) : 0, time);
      prechecked = true;
      return caller;
    };
    // the bytes as read are kept for the request's bodies, if its app keeps them (dropped at step 3)
    let raw: Buffer | undefined;
    const check = (buf: Buffer) => {
      raw = buf;
      if (!key) refuseUnnamedLink(buf);
    };
    body = await readBody(event, deps, spec, cancel, judge, check);

    // 3. The caller (an app key, or a share-link user where the kind admits them), known before the
    //    body is validated: a caller who may not ask costs no validation; then the body and its model.
    const caller = identify(deps, key, (!key && spec.share?.(body)) || {}, time, spec.what, facts);
    const req = spec.parse(requestParts(event, body));
    facts.stream = spec.streams?.(req) ?? false;
    const model = spec.model(req, caller);
    facts.model = model.model;
    const pinned = pinnedChannel(event, caller, deps.router, model.model);
    const bodiesKey = caller.app.logBodies !== "off" && deps.bodyLog ? captureBodies(event, deps.bodyLog, caller.app.logBodies, requestText(body, spec, raw), facts, time) : undefined;
    raw = undefined;
    const call: Call<Req, Model> = { event, req, caller, model, time, started, cancel, facts };
    // its calls in flight: a slot in every capped scope, until the request is over
    freeSlots = await takeSlots(deps.state, caller.concurrency, caller.share !== undefined, time);

    // 4. The cheap refusals before any costly work (an operator's callback, a history read, token
    //    counting): every QPM window counts the request, and a budget must have room for its least.
    if (!prechecked) await deps.quota.precheck(caller.limits, spec.least?.(model) ?? 0, time);

    // 5. The kind's limits and input checks: what will be asked of the channel, at most what cost.
    const plan = await spec.prepare(call);

    // 6. Budgets: the worst case (or what is left of it) is held before the call and settled to the
    //    actual after; a plan the budgets cannot pay in full shrinks to what they hold.
    const reservation = await deps.quota.admit(caller.limits, plan.worstCase, time, { ratesCounted: true });
    meter = new Meter(deps, caller, model.model, reservation, facts, { time, started, chatId: plan.chatId, endpoint: event.url.pathname, user: plan.user ?? endUser(body), bodiesKey });
    const m = meter;
    await spec.afford?.(plan, call, reservation);

    // 7. An answer from some channel of the model — its session's replica first, where it has one
    //    (docs/routing.md) —; each attempt runs under its channel's total deadline.
    const signals = spec.affinity?.(plan, call);
    const { result } = await withFailover(
      deps.router,
      deps.observer,
      {
        model: model.model,
        // the key (a digest of up to 64 KiB of the prompt) is made only where a choice among replicas needs it
        affinity: signals && (() => affinityKey(signals, caller, model.model, event.req.headers)),
        prefix: signals && (() => prefixParts(signals, model.model)),
        cancel,
        maxAttempts: deps.maxAttempts,
        pinned,
        // share-link users are anonymous: one is told from another by the address they call from
        caller: caller.share ? `${caller.scope}:${clientAddress(event, deps.trustProxy)}` : caller.scope,
        onAttempt: (entry) => {
          m.channel = facts.channel = entry.config.name;
          m.channelId = entry.config.id ?? null;
          facts.attempts = (facts.attempts ?? 0) + 1;
          clearTimeout(deadline);
          deadline = setTimeout(() => cancel.abort("timeout"), entry.config.totalTimeoutMs);
        },
        ticket: { priority: caller.priority, app: caller.app.id },
      },
      (client) => spec.attempt(client, plan, call),
    );

    // 8–9. The answer in the kind's shape, whole or streamed, and what it used settled.
    return await answer({ event, meter, cancel, facts, model: model.model, started }, await spec.respond(result, plan, call));
  } catch (err) {
    // The failure path: nothing generated reached the client.
    if (err instanceof UpstreamError && err.detail) facts.upstreamMessage = err.detail;
    const error = toGatewayError(err);
    await meter?.fail(error.status, error);
    throw err;
  } finally {
    clearTimeout(deadline);
    freeSlots?.();
    untrack();
    if (body !== undefined) await spec.release?.(body);
    if (spec.rawTexts) releaseRawTexts(body);
    // a request over with its hold neither settled nor released is the pipeline's bug: never silent
    if (meter && !meter.ended) await unsettled(meter);
  }
}

/** The request as received, for a log's detail: its bytes, or what the kind says an upload was. */
function requestText<Body>(body: Body, spec: { logged?: (body: Body) => string }, raw: Buffer | undefined): Buffer | string {
  return spec.logged ? spec.logged(body) : (raw ?? JSON.stringify(body));
}

export function readBody<Body, Model extends { model: string } = never>(
  event: H3Event,
  deps: Pick<MeteredDeps, "inflight" | "body">,
  spec: Pick<MeteredSpec<never, Model, never, never, Body>, "read" | "rawTexts">,
  cancel: Cancel,
  judge?: Judge<Model>,
  check?: (raw: Buffer) => void,
): Promise<Body> {
  const done = deps.inflight.reading(cancel);
  // without a reader of its own, a kind's body is JSON (its parse types it); a reader judges the
  // caller before it stores the bulk, so it is given the judge (runMetered always has one)
  const read = spec.read
    ? judge
      ? spec.read(event, deps.body, cancel, judge)
      : Promise.reject(new Error("a body reader runs only with a judge"))
    : (readJsonBody(event, deps.body, cancel, spec.rawTexts === true, check) as Promise<Body>);
  return read.finally(done);
}

function refuseUnnamedLink(raw: Buffer): void {
  if (!mayNameShareLink(raw)) throw missingApiKey();
}

/** The caller, named on the request's facts (for its log line and metrics, refused or not). */
function identify(deps: MeteredDeps, key: KeyIdentity | undefined, share: ShareFields, time: number, what: string, facts: RequestFacts): Caller {
  const caller = identifyCaller(deps, key, share, time, what);
  Object.assign(facts, { appId: caller.app.id, keyName: caller.key?.name, shareId: caller.share?.link.shareId });
  return caller;
}

/** The hold released, a usage row of 500, and a 500 for the client and the request log. */
async function unsettled(meter: Meter): Promise<never> {
  await meter.fail(500);
  throw new GatewayError(500, "internal_error", "Internal server error", { type: "server_error" });
}
