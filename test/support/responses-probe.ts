// A stand-in for the gateway's /v1/responses, for probing the real clients (openai SDK, Agents SDK,
// Codex CLI) before the metered pipeline serves the dialect: a real node:http server on 127.0.0.1
// that records every request as sent, runs the Responses dialect's translations (request → chat
// request, a scripted model's chat answer → Response / events) and keeps stored responses in memory.
// No keys, limits or metering: those are the pipeline's. Once the pipeline serves /v1/responses,
// the same client tests run against the gateway with the test upstream behind it.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChatRequest } from "../../src/chat/request-schema.js";
import { GatewayError, toGatewayError } from "../../src/http/errors.js";
import {
  conversationOf,
  createResponsesStream,
  deletedResponse,
  parseResponsesRequest,
  previousResponseNotFound,
  responseNotFound,
  responsesError,
  storedResponse,
  storedRow,
  toResponse,
  translateRequest,
  type StoredResponseRow,
} from "../../src/dialects/responses/index.js";
import type { ChatChunk, DialectUsage } from "../../src/dialects/responses/types.js";
import type { CompletionJson } from "../../src/chat/attempt.js";

export interface RecordedCall {
  method: string;
  path: string;
  /** lower-case names */
  headers: Record<string, string>;
  /** the parsed JSON body (undefined when there was none) */
  body: any;
}

/** What the scripted model answers to one chat request. */
export interface ModelTurn {
  reasoning?: string;
  text?: string;
  calls?: Array<{ name: string; arguments: string }>;
  /** default: tool_calls when there are calls, else stop */
  finish?: string;
  usage?: DialectUsage;
  /** refused before the first byte, with this error */
  error?: GatewayError;
  /** the stream is cut after this many chunks (a failure after the first byte) */
  cutAfterChunks?: number;
}

export type Model = (chat: ChatRequest, turn: number) => ModelTurn;

export interface ResponsesProbe {
  /** http://127.0.0.1:PORT/v1 */
  baseURL: string;
  calls: RecordedCall[];
  /** the chat requests the dialect made of the POSTs */
  chats: ChatRequest[];
  stored: Map<string, StoredResponseRow>;
  close(): Promise<void>;
}

const APP = "probe-app";

export async function startResponsesProbe(model: Model): Promise<ResponsesProbe> {
  const calls: RecordedCall[] = [];
  const chats: ChatRequest[] = [];
  const stored = new Map<string, StoredResponseRow>();
  const server = createServer((req, res) => {
    handle(req, res).catch((err) => sendError(res, toGatewayError(err)));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req);
    const call: RecordedCall = { method: req.method ?? "", path: req.url ?? "", headers: headersOf(req), body: text ? JSON.parse(text) : undefined };
    calls.push(call);
    const id = /^\/v1\/responses\/([^/?]+)$/.exec(call.path)?.[1];
    if (call.method === "POST" && call.path === "/v1/responses") return respond(call.body, res);
    if (call.method === "GET" && id) return sendJson(res, 200, storedResponse(live(id)));
    if (call.method === "DELETE" && id) {
      live(id);
      stored.delete(id);
      return sendJson(res, 200, deletedResponse(id));
    }
    throw new GatewayError(404, "not_found", "No such route.");
  }

  function live(id: string): StoredResponseRow {
    const row = stored.get(id);
    if (!row) throw responseNotFound();
    return row;
  }

  async function respond(body: unknown, res: ServerResponse): Promise<void> {
    // 1. Translate, with the stored conversation of previous_response_id
    const request = parseResponsesRequest(body);
    const previousId = request.previous_response_id;
    const previous = previousId ? stored.get(previousId) : undefined;
    if (previousId && !previous) throw previousResponseNotFound();
    const { chat, ctx } = translateRequest(request, previous ? conversationOf(previous) : []);
    chats.push(chat);

    // 2. The model's answer, whole or streamed through the dialect
    const turn = model(chat, chats.length);
    if (turn.error) throw turn.error;
    const usage = turn.usage ?? { input: 10, output: 5 };
    const finish = turn.finish ?? (turn.calls?.length ? "tool_calls" : "stop");
    let response;
    if (!ctx.stream) {
      response = toResponse(completionOf(turn, finish), usage, ctx);
      sendJson(res, 200, response);
    } else {
      const t = createResponsesStream(ctx);
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
      res.write(t.begin());
      const chunks = chunksOf(turn);
      const cut = turn.cutAfterChunks;
      for (const c of cut === undefined ? chunks : chunks.slice(0, cut)) res.write(t.chunk(c));
      res.end(cut === undefined ? t.end(finish, usage) : t.fail(new GatewayError(502, "upstream_error", "The model's answer was cut off.")));
      response = t.result();
    }

    // 3. Kept for previous_response_id and GET/DELETE, unless store: false
    const row = response && storedRow(ctx, response, { appId: APP, keyName: "probe" }, { now: Date.now(), retentionDays: 1 });
    if (row) stored.set(row.id, row);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    calls,
    chats,
    stored,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The turn as upstream chat chunks: reasoning in two pieces, text in three, each call's arguments in two. */
export function chunksOf(turn: ModelTurn): ChatChunk[] {
  const chunks: ChatChunk[] = [{ choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }];
  for (const piece of split(turn.reasoning ?? "", 2)) chunks.push({ choices: [{ index: 0, delta: { reasoning_content: piece } }] });
  for (const piece of split(turn.text ?? "", 3)) chunks.push({ choices: [{ index: 0, delta: { content: piece } }] });
  (turn.calls ?? []).forEach((call, index) => {
    chunks.push({ choices: [{ index: 0, delta: { tool_calls: [{ index, id: callId(), type: "function", function: { name: call.name, arguments: "" } }] } }] });
    for (const piece of split(call.arguments, 2)) chunks.push({ choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: piece } }] } }] });
  });
  return chunks;
}

function completionOf(turn: ModelTurn, finish: string): CompletionJson {
  const message: Record<string, unknown> = { role: "assistant", content: turn.text ?? null };
  if (turn.reasoning) message.reasoning_content = turn.reasoning;
  if (turn.calls?.length) message.tool_calls = turn.calls.map((c) => ({ id: callId(), type: "function", function: c }));
  return { object: "chat.completion", choices: [{ index: 0, message, finish_reason: finish }] };
}

const callId = () => `call_${randomBytes(8).toString("hex")}`;

function split(text: string, parts: number): string[] {
  if (!text) return [];
  const size = Math.ceil(text.length / parts);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

async function readBody(req: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += chunk;
  return text;
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) out[name] = Array.isArray(value) ? value.join(", ") : (value ?? "");
  return out;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, err: GatewayError): void {
  if (res.headersSent) return void res.destroy();
  const { status, body, headers } = responsesError(err);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
  res.end(JSON.stringify(body));
}
