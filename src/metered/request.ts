// One metered request (docs/architecture.md#pipeline): what the pipeline knows of it as it goes —
// its facts, key, Cancel, body, caller, slots, deadline and meter — and one method per step of the
// pipeline (./pipeline.ts lists them in order). It is the kinds' `Call` too, and the request the
// taps (./taps.ts) and its attempts (upstream/attempt.ts) are told about.
import { missingApiKey, type KeyIdentity } from "../auth/keys.js";
import type { AnswerListener } from "../http/answer-out.js";
import type { Cancel } from "../http/cancel.js";
import type { GatewayError } from "../http/errors.js";
import type { RequestFacts } from "../http/facts.js";
import type { Reply } from "../http/node.js";
import { releaseRawTexts } from "../json/raw-text.js";
import type { AttemptOutcome, RouteDecision } from "../observability/observer.js";
import type { Attempt, AttemptTaps } from "../upstream/attempt.js";
import { withFailover } from "../upstream/failover.js";
import type { ChannelEntry } from "../upstream/types.js";
import { affinityKey } from "./affinity.js";
import { endUser, identifyCaller, mayNameShareLink, type Caller } from "./caller.js";
import { internalCaller, internalChannel, pinnedChannel } from "./channel-pin.js";
import { takeSlots, type FreeSlots } from "./concurrency.js";
import type { Inbound } from "./inbound.js";
import { Meter } from "./meter.js";
import type { MeteredDeps } from "./deps.js";
import { prefixParts } from "./prefix.js";
import { answer } from "./respond.js";
import type { Call, MeteredSpec, PlanBase, Whole, Streamed } from "./spec.js";
import { NO_PROBES, openProbes, type MeteredRequest as TappedRequest, type Probe } from "./taps.js";

const bearer = (headers: Headers) => headers.get("authorization");

export class MeteredRequest<Req = unknown, Model extends { model: string } = { model: string }, Plan extends PlanBase = PlanBase, Answer = unknown, Body = unknown>
  implements Call<Req, Model>, AttemptTaps, TappedRequest, AnswerListener
{
  /** epoch ms at arrival, and performance.now() at arrival for durations */
  readonly time: number;
  readonly started = performance.now();
  readonly facts: RequestFacts;
  key: KeyIdentity | undefined;
  cancel!: Cancel;
  #untrack: (() => void) | undefined;
  body: Body | undefined;
  /** the body's bytes as read, for the bodies a tap keeps; dropped once the caller is known */
  raw: Buffer | undefined;
  req!: Req;
  caller!: Caller;
  model!: Model;
  meter: Meter | undefined;
  /** the key the request's bodies are stored by, given the usage row (set by the body tap) */
  bodiesKey: string | undefined;
  #prechecked = false;
  #pinned: ChannelEntry | undefined;
  #freeSlots: FreeSlots | undefined;
  #deadline: NodeJS.Timeout | undefined;
  probes: readonly Probe[];

  constructor(
    readonly inbound: Inbound,
    readonly deps: MeteredDeps,
    readonly spec: MeteredSpec<Req, Model, Plan, Answer, Body>,
  ) {
    this.time = deps.clock();
    this.facts = inbound.facts;
    this.probes = openProbes(deps.taps, this);
  }

  /** 1. A key, when one is sent, is checked before the body is read: a wrong key costs no parsing;
   *  only a kind open to share-link users may be called without one (their link is in the body).
   *  Then the request's Cancel: its work stops when the client leaves, a deadline passes or the
   *  gateway shuts down. */
  async authenticate(): Promise<void> {
    const credential = (this.spec.credential ?? bearer)(this.inbound.headers);
    this.key = credential ? await this.deps.keyring.authenticateFresh(credential) : undefined;
    if (!this.key && !this.spec.share) throw missingApiKey();
    const tracked = this.inbound.track(this.deps.inflight);
    this.cancel = tracked.cancel;
    this.#untrack = tracked.untrack;
  }

  /** 2. The body, read; without a key, one that names no share link is not even parsed. An upload's
   *  reader judges steps 3 and 4 before it stores the file (`judge`): a refused caller costs no disk.
   *  `checked` false: a body without a key is read whatever it names (a route that takes no key). */
  async read(checked = true): Promise<void> {
    const { spec, deps, inbound } = this;
    const done = deps.inflight.reading(this.cancel);
    try {
      if (spec.read) {
        if (!inbound.event) throw new Error(`${spec.what} reads its body from an HTTP request`);
        this.body = await spec.read(inbound.event, deps.body, this.cancel, this.judge);
      } else this.body = (await inbound.readJson(deps.body, this.cancel, spec.rawTexts === true, checked ? this.#check : undefined)) as Body;
    } finally {
      done();
    }
  }

  /** The upload reader's judge: the caller, the model `pick` names, the QPM pre-check. */
  readonly judge = async (pick?: (caller: Caller) => Model): Promise<Caller> => {
    const caller = this.#identify({});
    const model = pick?.(caller);
    await this.deps.quota.precheck(caller.limits, model ? (this.spec.least?.(model) ?? 0) : 0, this.time);
    this.#prechecked = true;
    return caller;
  };

  readonly #check = (buf: Buffer): void => {
    this.raw = buf;
    if (!this.key && !mayNameShareLink(buf)) throw missingApiKey();
  };

  /** 3. The caller (an app key, or a share-link user where the kind admits them), known before the
   *  body is validated: a caller who may not ask costs no validation; then the body and its model,
   *  a pinned channel, and the taps told. */
  identify(): void {
    const { spec, body } = this;
    this.caller = this.#identify((!this.key && spec.share?.(body)) || {});
    this.req = spec.parse(this.inbound.parts(body as Body));
    this.facts.stream = spec.streams?.(this.req) ?? false;
    this.model = spec.model(this.req, this.caller);
    this.facts.model = this.model.model;
    const channel = this.inbound.internal?.channel;
    this.#pinned = channel !== undefined ? internalChannel(this.deps.router, channel, this.model.model) : pinnedChannel(this.inbound.headers, this.caller, this.deps.router, this.model.model);
    if (this.probes.length > 0) this.#tapped();
    this.raw = undefined;
  }

  /** The probes told who asks (those that leave, dropped); the answer's bytes teed to them if one reads it. */
  #tapped(): void {
    this.probes = this.probes.filter((p) => p.identified?.(this) !== false);
    if (this.probes.some((p) => p.written || p.answered)) this.inbound.tee(this);
  }

  #identify(share: Parameters<typeof identifyCaller>[2]): Caller {
    const found = identifyCaller(this.deps, this.key, share, this.time, this.spec.what);
    const caller = this.inbound.internal ? internalCaller(found, this.inbound.internal) : found;
    Object.assign(this.facts, { appId: caller.app.id, keyName: caller.key?.name, shareId: caller.share?.link.shareId });
    return caller;
  }

  /** The request as received, for a log's detail: its bytes, or what the kind says an upload was. */
  requestText(): Buffer | string {
    return this.spec.logged ? this.spec.logged(this.body as Body) : (this.raw ?? JSON.stringify(this.body));
  }

  /** 4. Its calls in flight: a slot in every capped scope, until the request is over; then the cheap
   *  refusals before any costly work: every QPM window counts the request, and a budget must have
   *  room for its least. */
  async admitCheap(): Promise<void> {
    const { caller } = this;
    this.#freeSlots = await takeSlots(this.deps.state, caller.concurrency, caller.share !== undefined, this.time);
    if (!this.#prechecked) await this.deps.quota.precheck(caller.limits, this.spec.least?.(this.model) ?? 0, this.time);
  }

  /** 6. Budgets: the worst case (or what is left of it) held before the call and settled to the
   *  actual after; a plan the budgets cannot pay in full shrinks to what they hold. */
  async hold(plan: Plan): Promise<void> {
    const { caller, deps, time } = this;
    const reservation = await deps.quota.admit(caller.limits, plan.worstCase, time, { ratesCounted: true });
    const at = { time, started: this.started, chatId: plan.chatId, endpoint: this.inbound.path, user: plan.user ?? endUser(this.body), bodiesKey: this.bodiesKey, internal: this.inbound.internal };
    this.meter = new Meter(deps, caller, this.model.model, reservation, this.facts, at);
    await this.spec.afford?.(plan, this, reservation);
  }

  /** 7. An answer from some channel of the model — its session's replica first, where it has one
   *  (docs/routing.md) —; each attempt runs under its channel's total deadline. */
  async attempt(plan: Plan): Promise<Answer> {
    const { caller, deps, model, spec } = this;
    const signals = spec.affinity?.(plan, this);
    const { result } = await withFailover(
      deps.router,
      deps.observer,
      {
        model: model.model,
        // the key (a digest of up to 64 KiB of the prompt) is made only where a choice among replicas needs it
        affinity: signals && (() => affinityKey(signals, caller, model.model, this.inbound.headers)),
        prefix: signals && (() => prefixParts(signals, model.model)),
        cancel: this.cancel,
        maxAttempts: deps.maxAttempts,
        pinned: this.#pinned,
        // share-link users are anonymous: one is told from another by the address they call from
        caller: caller.share ? `${caller.scope}:${this.inbound.address(deps.trustProxy)}` : caller.scope,
        taps: this,
        ticket: { priority: caller.priority, app: caller.app.id, preempt: this.inbound.internal?.preempt },
      },
      (client) => spec.attempt(client, plan, this),
    );
    return result;
  }

  /** 8–9. The answer in the kind's shape, whole or streamed, and what it used settled. */
  answer(given: Whole | Streamed): Promise<Reply> {
    return answer({ inbound: this.inbound, meter: this.meter!, cancel: this.cancel, facts: this.facts, model: this.model.model, started: this.started }, given);
  }

  /** The failure path: nothing generated reached the client; the hold released, a usage row once a channel was reached. */
  async failed(error: GatewayError): Promise<void> {
    await this.meter?.fail(error.status, error);
  }

  /** Every path: the deadline, slots, tracking and body let go. */
  async over(): Promise<void> {
    clearTimeout(this.#deadline);
    this.#freeSlots?.();
    this.#untrack?.();
    if (this.body !== undefined) await this.spec.release?.(this.body);
    if (this.spec.rawTexts) releaseRawTexts(this.body);
  }

  /** The taps told the request is over: its hold settled or released (when one was made), and the
   *  status the pipeline gave (`failure`'s, else 200). */
  finished(failure: GatewayError | undefined): void {
    if (this.probes.length === 0) return;
    if (this.meter) for (const p of this.probes) p.settled?.(this, failure);
    for (const p of this.probes) p.finished?.(this, failure?.status ?? 200);
  }

  // What the answer's writer tells (http/answer-out.ts), passed on to the taps.
  written(chunk: string | Buffer): void {
    for (const p of this.probes) p.written?.(chunk);
  }
  closed(status: number, contentType: string): void {
    for (const p of this.probes) p.answered?.(status, contentType);
  }

  // What the attempts tell (upstream/attempt.ts), passed on to the taps.
  routed(model: string, decision: RouteDecision): void {
    for (const p of this.probes) p.routed?.(model, decision);
  }
  begun(attempt: Attempt): void {
    const { facts, meter } = this;
    const { config } = attempt.entry;
    meter!.channel = facts.channel = config.name;
    meter!.channelId = config.id ?? null;
    facts.attempts = (facts.attempts ?? 0) + 1;
    clearTimeout(this.#deadline);
    this.#deadline = setTimeout(this.#timeout, config.totalTimeoutMs);
    for (const p of this.probes) p.attemptBegun?.(attempt);
  }
  readonly #timeout = () => this.cancel.abort("timeout");
  queued(attempt: Attempt, waitedMs: number): void {
    for (const p of this.probes) p.queued?.(attempt, waitedMs);
  }
  ended(attempt: Attempt, outcome: AttemptOutcome, error?: GatewayError): void {
    for (const p of this.probes) p.attemptEnded?.(attempt, outcome, error);
  }
}

export { NO_PROBES };
