// One chat attempt on one channel: the limited body (made once, by the first attempt) posted to
// `/chat/completions`, the answer taken as a stream (SSE bytes, relayed as they come) or read whole
// (its JSON checked). Reading a whole answer is part of the attempt: a connection lost mid-body
// fails over like a refused one.
import type { SseAnswer } from "../stream/answer.js";
import { jsonBody } from "../json/raw-text.js";
import { readJsonReply, contentTypeOf } from "../upstream/read.js";
import type { ChannelClient } from "../upstream/types.js";
import type { Usage } from "../stream/chunk.js";
import type { ChatCall, ChatPlan } from "./plan.js";
import { upstreamBody } from "./upstream-body.js";

export type { Usage };

/** A non-stream answer: the upstream's chat.completion object. */
export interface CompletionJson {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices: Array<{ index?: number; message?: { role?: string; content?: string | null; [key: string]: unknown }; finish_reason?: string | null }>;
  usage?: Usage | null;
  [key: string]: unknown;
}


/** the upstream's SSE bytes as they arrive, or its whole answer */
export type ChatAnswer = SseAnswer<CompletionJson>;

const isCompletion = (v: unknown): v is CompletionJson => !!v && typeof v === "object" && Array.isArray((v as { choices?: unknown }).choices);

export async function attemptChat(client: ChannelClient, plan: ChatPlan, call: ChatCall): Promise<ChatAnswer> {
  const model = call.model.model;
  // made once for every attempt (the share-link request is FastGPT's fields only)
  plan.body ??= jsonBody(upstreamBody(plan.req, call.model, plan.limited, call.caller.share !== undefined));
  const reply = await client.post({ path: "/chat/completions", body: plan.body, signal: call.cancel, model });
  if (plan.stream && contentTypeOf(reply).includes("text/event-stream")) return { kind: "stream", body: reply.body, maxBytes: reply.maxBytes };
  return { kind: "json", completion: await readJsonReply(reply, model, isCompletion) };
}
