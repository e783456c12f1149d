// What a request kind tells the one metered pipeline (docs/architecture.md#pipeline): how to read
// and check its body, which model it names, its limits and worst case, one attempt on a channel,
// and its answer. Everything else — keys, caller, admission, failover, deadlines, settling, usage
// rows, the failure path — is the pipeline's and the same for every kind.
import type { H3Event } from "h3";
import type { BodyLimits } from "../http/body.js";
import type { Cancel } from "../http/cancel.js";
import type { GatewayError } from "../http/errors.js";
import type { RequestFacts } from "../http/facts.js";
import type { Reply } from "../http/node.js";
import type { ChannelClient } from "../upstream/types.js";
import type { Caller } from "./caller.js";
import type { Meter } from "./meter.js";
import type { WorstCase } from "./quota.js";

/** What the pipeline knows of a request once its caller and model are known. */
export interface Call<Req, Model> {
  event: H3Event;
  req: Req;
  caller: Caller;
  model: Model;
  /** epoch ms at arrival, and performance.now() at arrival for durations */
  time: number;
  started: number;
  /** fires when the client left, the deadline passed or the gateway shuts down */
  cancel: Cancel;
  facts: RequestFacts;
}

/** What `prepare` decides: the most the request can cost, and what its usage row names. */
export interface PlanBase {
  worstCase: WorstCase | number;
  /** the conversation the usage row names */
  chatId?: string;
}

/** An answer streamed to the client: the head, then `pump` writes the body. A failure `pump`
 *  throws after the head is written ends the stream with `error(err)` (never a clean end). */
export interface Streamed {
  headers: Record<string, string>;
  pump(res: import("node:http").ServerResponse): Promise<void>;
  error(err: GatewayError): string;
}

export interface MeteredSpec<Req, Model extends { model: string }, Plan extends PlanBase, Answer> {
  /** the endpoint, in the words of the 403 a global key gets ("Chat", "Embeddings") */
  what: string;
  /** the Authorization-style credential sent, from the request headers (default: Authorization) */
  credential?(headers: Headers): string | null;
  /** the body (default: JSON within the server's limits) */
  read?(event: H3Event, limits: BodyLimits, cancel: Cancel): Promise<unknown>;
  /** runs once the request is over, on every path, with what `read` gave (a spooled upload is removed) */
  release?(body: unknown): void | Promise<void>;
  /** what the body read by `read` is in a log's detail (docs/fastgpt.md#bodies); absent: its JSON */
  logged?(body: unknown): string;
  /** long message contents of a large JSON body stay the client's bytes (src/http/raw-text.ts) */
  rawTexts?: boolean;
  parse(body: unknown): Req;
  /** whether the answer streams (for the request log), known from the request */
  streams?(req: Req): boolean;
  /** share-link fields, for kinds that admit share-link users (no key) */
  share?(req: Req): { shareId?: string; outLinkUid?: string };
  /** the model the request names, among what the caller may use (404 model_not_found otherwise) */
  model(req: Req, caller: Caller): Model;
  /** the least a request of this model can cost, known before any work (one output token): a budget
   *  with less left is refused before `prepare` (docs/api.md#budgets) */
  least?(model: Model): number;
  /** limits and input checks, before any budget is held: what will be asked of the channel */
  prepare(call: Call<Req, Model>): Promise<Plan>;
  /** the hold was made: the plan shrinks to what it pays for when the budgets held less than its
   *  worst case (serve until spent, docs/api.md#budgets) */
  afford?(plan: Plan, call: Call<Req, Model>, heldPoints: number): Promise<void>;
  /** one attempt on one channel: rejects with the channel's failure to move to the next */
  attempt(client: ChannelClient, plan: Plan, call: Call<Req, Model>): Promise<Answer>;
  /** the answer, whole (settled through `meter` before it is returned) or streamed */
  respond(answer: Answer, plan: Plan, call: Call<Req, Model>, meter: Meter): Promise<Reply | Streamed>;
}

export function isStreamed(answer: Reply | Streamed): answer is Streamed {
  return typeof answer === "object" && "pump" in answer;
}
