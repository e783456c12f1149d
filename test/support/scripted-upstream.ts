// A Chat Completions model server (node:http on 127.0.0.1) that answers each request with a turn
// the test scripts: text, reasoning (`reasoning_content`) and tool calls as chunks, usage, a finish
// reason, an error status, or a cut after some chunks. Streams when asked (SSE, usage when
// `stream_options.include_usage`), else the turn folded into one chat.completion. Every request is
// recorded. The dialect tests (Messages, Responses) put the gateway in front of it, as a private
// model server that speaks only Chat Completions.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChatChunk } from "../../src/chat/dialect.js";

export interface ModelTurn {
  chunks: ChatChunk[];
  finishReason: string;
  /** the upstream's usage; absent: none reported (the gateway counts) */
  usage?: { prompt_tokens: number; completion_tokens: number; completion_tokens_details?: { reasoning_tokens: number }; prompt_tokens_details?: { cached_tokens: number } };
  /** answer with this HTTP status and an OpenAI error body instead */
  status?: number;
  /** that error answer's message (default: `scripted failure <status>`) */
  message?: string;
  /** headers of that error answer (Retry-After, …) */
  headers?: Record<string, string>;
  /** cut the connection after this many chunks (a failure after the first byte) */
  cutAfter?: number;
  /** pause before each chunk after the first */
  chunkDelayMs?: number;
  /** answer a stream request with one chat.completion, as some servers do */
  answerWhole?: boolean;
  /** the model the answer names (default: the request's), as a server that reports its own name */
  model?: string;
  /** after the first chunk, write nothing more until this settles (a model thinking in silence) */
  holdAfterFirst?: Promise<void>;
}

export interface ScriptedRequest {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown> & { messages: Array<Record<string, unknown>>; stream?: boolean };
}

/** Answers the `n`th chat request (0-based). */
export type ModelScript = (req: ScriptedRequest, n: number) => ModelTurn | Promise<ModelTurn>;

export interface ScriptedUpstream {
  url: string;
  readonly requests: ScriptedRequest[];
  close(): Promise<void>;
}

export async function startScriptedUpstream(script: ModelScript): Promise<ScriptedUpstream> {
  const requests: ScriptedRequest[] = [];
  let n = 0;
  const server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? "/";
    if (req.method === "GET" && path.endsWith("/v1/models")) return send(res, 200, { object: "list", data: [] });
    if (req.method !== "POST" || !path.endsWith("/v1/chat/completions")) return send(res, 404, { error: { message: "not found" } });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ScriptedRequest["body"];
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    const recorded = { path, headers, body };
    requests.push(recorded);
    const turn = await script(recorded, n++);
    if (turn.status && turn.status !== 200) return send(res, turn.status, { error: { message: turn.message ?? `scripted failure ${turn.status}`, type: "server_error" } }, turn.headers);
    if (body.stream !== true || turn.answerWhole) return send(res, 200, wholeCompletion(turn, turn.model ?? String(body.model)));
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    const frames = [...turn.chunks, { choices: [{ index: 0, delta: {}, finish_reason: turn.finishReason }] } as ChatChunk];
    const withUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true && turn.usage;
    if (withUsage) frames.push({ choices: [], usage: turn.usage });
    for (let i = 0; i < frames.length; i++) {
      if (i === turn.cutAfter) return void res.destroy();
      if (i === 1 && turn.holdAfterFirst) await turn.holdAfterFirst;
      if (i > 0 && turn.chunkDelayMs) await new Promise((r) => setTimeout(r, turn.chunkDelayMs));
      res.write(`data: ${JSON.stringify({ id: "chatcmpl-scripted", object: "chat.completion.chunk", created: 1, model: turn.model ?? body.model, ...frames[i] })}\n\n`);
    }
    res.end("data: [DONE]\n\n");
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** The chunks of a turn folded into the chat.completion an upstream would have answered whole. */
export function wholeCompletion(turn: ModelTurn, model = "scripted"): Record<string, unknown> {
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
  return {
    id: "chatcmpl-scripted",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message, finish_reason: turn.finishReason }],
    ...(turn.usage ? { usage: turn.usage } : {}),
  };
}

/** Chunks of a plain text answer, `pieces` of it per chunk. */
export function textChunks(text: string, pieces = 3): ChatChunk[] {
  const size = Math.max(1, Math.ceil(text.length / pieces));
  const chunks: ChatChunk[] = [];
  for (let i = 0; i < text.length; i += size) chunks.push({ choices: [{ index: 0, delta: { content: text.slice(i, i + size) } }] });
  return chunks;
}

/** Chunks of reasoning before the answer (vLLM's `reasoning_content`). */
export function reasoningChunks(text: string, pieces = 2): ChatChunk[] {
  return textChunks(text, pieces).map((c) => ({ choices: [{ index: 0, delta: { reasoning_content: c.choices![0]!.delta!.content } }] }));
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
