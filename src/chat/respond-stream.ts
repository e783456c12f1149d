// A streamed answer. Upstream chunks are written to the client as they arrive; the usage chunk the
// gateway always asks for is hidden from clients that did not ask; `detail` switches to FastGPT's
// event stream. A failure after the first byte ends the stream with an error event, never cleanly.
import { PassThrough } from "node:stream";
import { FastResponse } from "srvx";
import { GatewayError } from "../http/errors.js";
import { UpstreamError, badUpstreamReply, mapTransportError } from "../upstream/errors.js";
import type { CompletionJson, Usage } from "../upstream/types.js";
import { settleAnswer, settleFailure, type Exchange, type SettleDeps, type Settled } from "./settle.js";

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

export interface StreamOptions {
  detail: boolean;
  includeUsage: boolean;
  /** aborted when the client went away; the upstream call is aborted with it */
  signal: AbortSignal;
  onFirstToken: () => void;
}

export interface StreamEnd {
  settled?: Settled;
  error?: GatewayError;
  clientGone: boolean;
}

interface ChunkShape {
  choices?: Array<{ delta?: { content?: string | null }; finish_reason?: string | null }>;
  usage?: Usage | null;
  error?: unknown;
}

export function respondStream(deps: SettleDeps, ex: Exchange, events: AsyncIterable<string>, opts: StreamOptions): { response: Response; done: Promise<StreamEnd> } {
  const out = new PassThrough();
  out.on("error", () => {}); // a write racing the client's disconnect is not a failure of ours
  const prefix = opts.detail ? "event: answer\ndata: " : "data: ";
  const send = (data: string) => {
    if (!out.destroyed) out.write(`${prefix}${data}\n\n`);
  };

  async function pump(): Promise<StreamEnd> {
    let text = "";
    let usage: Usage | undefined;
    let finishReason = "stop";
    let first = true;
    try {
      for await (const data of events) {
        const chunk = JSON.parse(data) as ChunkShape;
        if (chunk.error) throw chunk.error;
        const choice = chunk.choices?.[0];
        const piece = choice?.delta?.content;
        if (piece) {
          text += piece;
          if (first) {
            first = false;
            opts.onFirstToken();
          }
        }
        if (choice?.finish_reason) finishReason = choice.finish_reason;
        if (chunk.usage) {
          usage = chunk.usage;
          if (!opts.includeUsage) {
            if (!chunk.choices || chunk.choices.length === 0) continue;
            delete chunk.usage;
            send(JSON.stringify(chunk));
            continue;
          }
        }
        send(data);
      }
      const settled = await settleAnswer(deps, ex, { text, usage, finishReason });
      if (opts.includeUsage && !usage) send(usageChunk(settled));
      send("[DONE]");
      if (opts.detail && !out.destroyed) out.write(`event: flowResponses\ndata: ${JSON.stringify([settled.report()])}\n\n`);
      out.end();
      return { settled, clientGone: false };
    } catch (err) {
      // 499: the client closed the request (nginx's convention), recorded so it shows in usage
      if (opts.signal.aborted) {
        await settleFailure(deps, ex, 499);
        return { clientGone: true };
      }
      const error = toStreamError(err, ex.model.model);
      await settleFailure(deps, ex, error.status);
      if (!out.destroyed) {
        out.write(opts.detail ? `event: error\ndata: ${JSON.stringify(error.toBody())}\n\n` : `data: ${JSON.stringify(error.toBody())}\n\n`);
        out.end();
      }
      return { error, clientGone: false };
    }
  }

  // srvx pipes a Node stream body straight into the socket: no web-stream hop per chunk
  const response = new FastResponse(out as unknown as ReadableStream, { status: 200, headers: SSE_HEADERS });
  return { response, done: pump() };
}

function toStreamError(err: unknown, model: string): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof SyntaxError) return badUpstreamReply(model);
  if (err && typeof err === "object" && !(err instanceof Error)) {
    // an `error` object the upstream sent mid-stream: its text may carry internals, so say less
    return new UpstreamError(502, "upstream_error", `The model server for ${model} reported an error during the answer.`, "http_error");
  }
  return mapTransportError(err, model);
}

/** A whole completion as stream events, for an upstream that answered a stream request with JSON. */
export async function* completionAsEvents(completion: CompletionJson): AsyncGenerator<string> {
  const { choices, usage, ...rest } = completion;
  const base = { ...rest, object: "chat.completion.chunk" };
  const choice = choices[0];
  yield JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: choice?.message?.content ?? "" }, finish_reason: null }] });
  yield JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: choice?.finish_reason ?? "stop" }], ...(usage ? { usage } : {}) });
}

function usageChunk(s: Settled): string {
  return JSON.stringify({
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt_tokens: s.inputTokens, completion_tokens: s.outputTokens, total_tokens: s.inputTokens + s.outputTokens },
  });
}
