// What a dialect of chat is to the pipeline (docs/architecture.md#dialects): a request translation
// into the chat request every upstream is called with, and an answer and a stream translation out of
// the upstream's Chat Completions answer — nothing else. Keys, limits, budgets, failover, usage rows,
// metrics and logs are the chat path's (src/chat/dialect-spec.ts).
import type { Caller } from "../metered/caller.js";
import type { GatewayError } from "../http/errors.js";
import type { ChunkTranslator } from "../stream/translated-relay.js";
import type { ChatChunk } from "../stream/chunk.js";
import type { CompletionJson } from "./attempt.js";
import type { ChatRequest } from "./request-schema.js";

export type { ChatChunk };

export interface DialectUsage {
  input: number;
  output: number;
  /** of `output`: the upstream's `completion_tokens_details.reasoning_tokens`, when it reports them */
  reasoning?: number;
  /** of `input`: the upstream's `prompt_tokens_details.cached_tokens` (a prefix cache's hits), when it reports them */
  cached?: number;
}

export interface StreamTranslator extends ChunkTranslator {
  /** what is written when the answer starts */
  begin(): string;
  /** the upstream finished normally: the closing events (`finishReason` the upstream's) */
  end(finishReason: string, usage: DialectUsage): string;
  /** a failure after the first byte: the dialect's error events — never the clean end */
  fail(err: GatewayError): string;
  /** the answer as a whole, once ended (what the dialect keeps of a stream) */
  result?(): unknown;
}

export interface ChatDialect<Req, Ctx> {
  /** the client's key, as an Authorization header's value (null: none sent) */
  credential(headers: Headers): string | null;
  /** the body validated: a 400 naming the field */
  parse(body: unknown): Req;
  /** the model the client named (an alias resolves like any name); absent: the app's default */
  model(req: Req): string | undefined;
  streams(req: Req): boolean;
  /** the chat request (once the caller is known: a dialect may continue what the caller stored) */
  toChat(req: Req, caller: Caller): Promise<{ chat: ChatRequest; ctx: Ctx }>;
  answer(completion: CompletionJson, usage: DialectUsage, ctx: Ctx): unknown;
  stream(ctx: Ctx): StreamTranslator;
  /** the dialect's own session field (Responses `prompt_cache_key`, Anthropic `metadata.user_id`):
   *  what keeps a session on one replica first (docs/routing.md#affinity-key) */
  session?(req: Req): unknown;
  /** what the dialect keeps of an answered request, written with its usage row (the Responses API's `store`) */
  keep?(ctx: Ctx, answer: unknown, caller: Caller): Promise<unknown> | undefined;
}

/** `Bearer <key>`, the form the keyring reads, for a key sent in a dialect's own header. */
export const asBearer = (key: string | undefined | null): string | null => (key ? `Bearer ${key}` : null);
