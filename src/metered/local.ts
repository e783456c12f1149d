// The pipeline's unmetered mode (docs/architecture.md#pipeline): a route answered by the gateway
// itself — count_tokens, the share API — runs the pipeline's first steps: the key (where the route
// takes one), the body read under the request's Cancel (a client hanging up mid-body is 499
// client_closed; a drain cuts a body still arriving), the caller and the cheap refusals; then the
// route's own answer. Nothing is held, no channel called, no usage row written.
import type { H3Event } from "h3";
import { missingApiKey } from "../auth/keys.js";
import { factsOf } from "../http/facts.js";
import { trackRequest } from "../http/inflight.js";
import { releaseRawTexts } from "../http/raw-text.js";
import type { Cancel } from "../http/cancel.js";
import { identifyCaller, type Caller } from "./caller.js";
import { readBody, type MeteredDeps } from "./pipeline.js";
import { requestParts, type RequestParts } from "./spec.js";

export interface LocalCall<Req> {
  event: H3Event;
  req: Req;
  /** the app key's caller; absent on a route that takes no key (the share API names its users in the body) */
  caller?: Caller;
  cancel: Cancel;
}

export interface LocalSpec<Req, Out> {
  /** the endpoint, in the words of the 403 a global key gets */
  what: string;
  /** the key sent (default: Authorization); `false`: the route takes no key */
  credential?: ((headers: Headers) => string | null) | false;
  rawTexts?: boolean;
  parse(request: RequestParts): Req;
  /** the answer, made by the gateway */
  answer(call: LocalCall<Req>): Promise<Out>;
}

export type LocalDeps = Pick<MeteredDeps, "keyring" | "apps" | "resolveShareLink" | "body" | "inflight" | "quota" | "timezone" | "clock">;

export async function runLocal<Req, Out>(event: H3Event, deps: LocalDeps, spec: LocalSpec<Req, Out>): Promise<Out> {
  const time = deps.clock();
  const facts = factsOf(event);
  // 1. The key, before the body is read.
  const credential = spec.credential === false ? undefined : (spec.credential ?? ((h: Headers) => h.get("authorization")))(event.req.headers);
  const key = credential ? await deps.keyring.authenticateFresh(credential) : undefined;
  if (!key && spec.credential !== false) throw missingApiKey();
  const { cancel, untrack } = trackRequest(event, deps.inflight);
  let body: unknown;
  try {
    // 2. The body, read under the request's Cancel, and validated.
    body = await readBody(event, deps, spec, cancel);
    const req = spec.parse(requestParts(event, body));
    // 3–4. The caller and the cheap refusals (every QPM window counts the request).
    let caller: Caller | undefined;
    if (key) {
      caller = identifyCaller(deps, key, {}, time, spec.what);
      Object.assign(facts, { appId: caller.app.id, keyName: key.name });
      await deps.quota.precheck(caller.limits, 0, time);
    }
    return await spec.answer({ event, req, caller, cancel });
  } finally {
    untrack();
    if (spec.rawTexts) releaseRawTexts(body);
  }
}
