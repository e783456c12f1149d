// The pipeline's unmetered mode (docs/architecture.md#pipeline): a route answered by the gateway
// itself — count_tokens, the share API — runs the pipeline's first steps (./request.ts): the key
// (where the route takes one), the body read under the request's Cancel (a client hanging up
// mid-body is 499 client_closed; a drain cuts a body still arriving), the caller and the cheap
// refusals; then the route's own answer. Nothing is held, no channel called, no usage row written.
import type { H3Event } from "h3";
import type { Cancel } from "../http/cancel.js";
import type { Caller } from "./caller.js";
import { HttpInbound } from "./http-inbound.js";
import type { MeteredDeps } from "./deps.js";
import { MeteredRequest } from "./request.js";
import type { MeteredSpec, RequestParts } from "./spec.js";

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

const NONE = () => null;

type Steps = Pick<MeteredSpec<unknown, { model: string }, never, never>, "what" | "credential" | "rawTexts" | "share" | "parse" | "model" | "prepare" | "attempt" | "respond">;
/** what each local route is to the request's first steps, made once per route */
const stepsOf = new WeakMap<object, Steps>();

function steps<Req, Out>(spec: LocalSpec<Req, Out>): Steps {
  let made = stepsOf.get(spec);
  if (made) return made;
  const never = () => {
    throw new Error("a local route runs the first steps only");
  };
  // a route that takes no key is open as a share-link kind is: no key, no refusal
  made = {
    what: spec.what,
    credential: spec.credential === false ? NONE : spec.credential,
    rawTexts: spec.rawTexts,
    share: spec.credential === false ? () => ({}) : undefined,
    parse: never,
    model: never,
    prepare: never,
    attempt: never,
    respond: never,
  };
  stepsOf.set(spec, made);
  return made;
}

export async function runLocal<Req, Out>(event: H3Event, deps: LocalDeps, spec: LocalSpec<Req, Out>): Promise<Out> {
  const r = new MeteredRequest(new HttpInbound(event), deps as MeteredDeps, steps(spec));
  try {
    // 1–2. The key, before the body is read; the body, read under the request's Cancel.
    await r.authenticate();
    await r.read(false);
    // 3–4. The body validated; the caller and the cheap refusals (every QPM window counts the request).
    const req = spec.parse(r.inbound.parts(r.body));
    const caller = r.key ? await r.judge() : undefined;
    return await spec.answer({ event, req, caller, cancel: r.cancel });
  } finally {
    await r.over();
  }
}
