// The one metered pipeline (docs/architecture.md#pipeline): every kind of model request — chat,
// embeddings, the Messages and Responses dialects, rerank, audio, completions — runs these steps,
// and only the kind's spec differs. One failure path: the hold released, a usage row written once a
// channel was reached, a begun stream ended with the kind's own error event.
import type { H3Event } from "h3";
import { GatewayError, toGatewayError } from "../http/errors.js";
import type { Reply } from "../http/node.js";
import { UpstreamError } from "../upstream/errors.js";
import type { MeteredDeps } from "./deps.js";
import { HttpInbound } from "./http-inbound.js";
import type { Inbound } from "./inbound.js";
import type { Meter } from "./meter.js";
import { MeteredRequest } from "./request.js";
import type { MeteredSpec, PlanBase } from "./spec.js";

export type { MeteredDeps } from "./deps.js";

/** The pipeline's steps over a request: an HTTP one (its H3Event, answered on its Node response) or
 *  a call in the process (an Inbound: memory-call.ts). */
export async function runMetered<Req, Model extends { model: string }, Plan extends PlanBase, Answer, Body>(
  source: H3Event | Inbound,
  deps: MeteredDeps,
  spec: MeteredSpec<Req, Model, Plan, Answer, Body>,
): Promise<Reply> {
  const r = new MeteredRequest("track" in source ? source : new HttpInbound(source), deps, spec);
  let failure: GatewayError | undefined;
  try {
    // 1. The key, before the body is read; then the request's Cancel.
    await r.authenticate();
    // 2. The body, read (an upload's reader judges steps 3 and 4 before it stores the file).
    await r.read();
    // 3. The caller, then the body validated and its model (the taps told who asks).
    r.identify();
    // 4. Its slots in capped scopes, and the cheap refusals before any costly work.
    await r.admitCheap();
    // 5. The kind's limits and input checks: what will be asked of the channel, at most what cost.
    const plan = await spec.prepare(r);
    // 6. The budgets' hold on the worst case (a plan they cannot pay shrinks to what they hold).
    await r.hold(plan);
    // 7. An answer from some channel of the model, each attempt under its channel's deadline.
    const result = await r.attempt(plan);
    // 8–9. The answer in the kind's shape, whole or streamed, and what it used settled.
    return await r.answer(await spec.respond(result, plan, r));
  } catch (err) {
    // The failure path: nothing generated reached the client.
    if (err instanceof UpstreamError && err.detail) r.facts.upstreamMessage = err.detail;
    failure = toGatewayError(err);
    await r.failed(failure);
    throw err;
  } finally {
    await r.over();
    // a request over with its hold neither settled nor released is the pipeline's bug: never silent
    if (r.meter && !r.meter.ended) await unsettled(r.meter);
    r.finished(failure);
  }
}

/** The hold released, a usage row of 500, and a 500 for the client and the request log. */
async function unsettled(meter: Meter): Promise<never> {
  await meter.fail(500);
  throw new GatewayError(500, "internal_error", "Internal server error", { type: "server_error" });
}
