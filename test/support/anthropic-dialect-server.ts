// A Messages server made of the Anthropic dialect's translations and a scripted chat "model", on a
// real 127.0.0.1 socket (the recording probe underneath). It stands in for the metered pipeline
// until the dialect is wired into it: each request is translated to a chat request, the script
// answers it with chat.completion chunks (or an error), and the chunks are translated back —
// streamed, or whole when the client did not ask for a stream.
import { countInputTokens, toCountChat } from "../../src/dialects/anthropic/count-tokens.js";
import { toAnswer } from "../../src/dialects/anthropic/answer.js";
import { anthropicError } from "../../src/dialects/anthropic/errors.js";
import { createStreamTranslator } from "../../src/dialects/anthropic/stream.js";
import { toChat, type MessagesCtx } from "../../src/dialects/anthropic/to-chat.js";
import type { ChatChunk } from "../../src/dialects/anthropic/types.js";
import type { ChatRequest } from "../../src/chat/request-schema.js";
import { GatewayError, toGatewayError } from "../../src/http/errors.js";
import type { CompletionJson } from "../../src/chat/attempt.js";
import { startProbe, type Probe, type ProbeReply } from "./anthropic-probe.js";

export interface ModelTurn {
  chunks: ChatChunk[];
  finishReason: string;
  usage?: { input: number; output: number };
  /** stop after this many chunks with this error (a failure after the first byte) */
  failAfter?: { chunks: number; error: GatewayError };
}

/** The chat request a call was translated to, with what the client sent. */
export interface DialectCall {
  path: string;
  chat: ChatRequest;
  ctx: MessagesCtx;
  /** the client's body */
  body: Record<string, unknown>;
}

/** Answers the `n`th messages call (count_tokens is answered by the dialect alone). Throwing a
 *  GatewayError answers it with the dialect's error. */
export type ModelScript = (chat: ChatRequest, n: number) => ModelTurn | Promise<ModelTurn>;

export interface DialectServer extends Probe {
  readonly calls: DialectCall[];
}

export async function startDialectServer(script: ModelScript): Promise<DialectServer> {
  const calls: DialectCall[] = [];
  let n = 0;
  const probe = await startProbe(async (req): Promise<ProbeReply> => {
    try {
      if (req.path === "/v1/messages/count_tokens") {
        const { chat, ctx } = toCountChat(req.body);
        calls.push({ path: req.path, chat, ctx, body: req.body as Record<string, unknown> });
        return { kind: "json", body: { input_tokens: await countInputTokens(chat, "cl100k_base") } };
      }
      if (req.path !== "/v1/messages") throw new GatewayError(404, "not_found", "No such endpoint.");
      // the probe keeps no key values: their presence is what a test can script on
      if (!req.headers["x-api-key"] && !req.headers["authorization"]) throw new GatewayError(401, "missing_api_key", "Missing API key.");
      const { chat, ctx } = toChat(req.body);
      calls.push({ path: req.path, chat, ctx, body: req.body as Record<string, unknown> });
      const turn = await script(chat, n++);
      return ctx.stream ? streamReply(turn, ctx) : { kind: "json", body: toAnswer(wholeCompletion(turn), usageOf(turn), ctx) };
    } catch (err) {
      const e = anthropicError(toGatewayError(err));
      return { kind: "json", status: e.status, headers: e.headers, body: e.body };
    }
  });
  return Object.assign(probe, { calls });
}

function usageOf(turn: ModelTurn) {
  return turn.usage ?? { input: 10, output: turn.chunks.length };
}

function streamReply(turn: ModelTurn, ctx: MessagesCtx): ProbeReply {
  const t = createStreamTranslator(ctx);
  let text = t.begin(usageOf(turn).input);
  const upTo = turn.failAfter?.chunks ?? turn.chunks.length;
  for (const chunk of turn.chunks.slice(0, upTo)) text += t.chunk(chunk);
  text += turn.failAfter ? t.fail(turn.failAfter.error) : t.end(turn.finishReason, usageOf(turn));
  return { kind: "sse", text };
}

/** The chunks of a turn folded into the chat.completion an upstream would have answered whole. */
export function wholeCompletion(turn: ModelTurn): CompletionJson {
  let content = "";
  let reasoning = "";
  const calls: Array<{ id?: string; type: "function"; function: { name: string; arguments: string } }> = [];
  for (const chunk of turn.chunks) {
    const d = chunk.choices?.[0]?.delta;
    content += d?.content ?? "";
    reasoning += d?.reasoning_content ?? d?.reasoning ?? "";
    for (const tc of d?.tool_calls ?? []) {
      const call = (calls[tc.index] ??= { type: "function", function: { name: "", arguments: "" } });
      if (tc.id) call.id = tc.id;
      call.function.name += tc.function?.name ?? "";
      call.function.arguments += tc.function?.arguments ?? "";
    }
  }
  const message: Record<string, unknown> = { role: "assistant", content: content || null };
  if (reasoning) message.reasoning_content = reasoning;
  if (calls.length) message.tool_calls = calls.filter(Boolean);
  return { choices: [{ index: 0, message, finish_reason: turn.finishReason }] } as CompletionJson;
}

/** Chunks of a plain text answer, `pieces` of it per chunk. */
export function textChunks(text: string, pieces = 3): ChatChunk[] {
  const size = Math.max(1, Math.ceil(text.length / pieces));
  const chunks: ChatChunk[] = [];
  for (let i = 0; i < text.length; i += size) chunks.push({ choices: [{ index: 0, delta: { content: text.slice(i, i + size) } }] });
  return chunks;
}

/** Chunks of one tool call, its arguments split in two, as vLLM streams them. */
export function toolCallChunks(index: number, id: string, name: string, args: unknown): ChatChunk[] {
  const json = JSON.stringify(args);
  const half = Math.floor(json.length / 2);
  return [
    { choices: [{ index: 0, delta: { tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] } }] },
    { choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: json.slice(0, half) } }] } }] },
    { choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: json.slice(half) } }] } }] },
  ];
}
