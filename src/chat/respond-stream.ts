// A streamed answer, written straight to the Node response: upstream bytes reach the client as
// they arrive (through the SSE relay), with backpressure; the usage chunk the gateway always asks
// for is hidden from clients that did not ask; `detail` switches to FastGPT's event stream. A
// failure after the first byte ends the stream with an error event, never with a clean end.
import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { Cancel } from "../http/cancel.js";
import { GatewayError } from "../http/errors.js";
import { answerTooLarge, mapTransportError, streamCut } from "../upstream/errors.js";
import { cutError } from "../upstream/failover.js";
import type { CompletionJson } from "../upstream/types.js";
import { SseRelay } from "./sse-relay.js";
import { clientReport, settleAnswer, type Exchange, type SettleDeps, type Settled } from "./settle.js";
import { hasAny } from "./variables.js";

// No `connection` header: Node writes its own, and only then adds `keep-alive: timeout=N`, which
// tells pooling clients to drop an idle connection before the server closes it under their next request.
export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

export interface StreamOptions {
  detail: boolean;
  includeUsage: boolean;
  /** fires when the client went away, a deadline passed or the gateway shuts down */
  signal: Cancel;
  /** the upstream's answer is cut past this many bytes */
  maxBytes: number;
  onFirstToken: () => void;
}

export interface StreamEnd {
  settled: Settled;
  /** the error that cut the stream (written to the client as an error event unless it left) */
  error?: GatewayError;
}

/** Relays `body` (upstream SSE bytes) to `res`, whose head is already written; resolves when all is
 *  written and the request is settled — answered or cut, it is billed for what was generated. The
 *  caller ends `res` (by returning HANDLED). */
export async function relayStream(deps: SettleDeps, ex: Exchange, body: Readable, res: ServerResponse, opts: StreamOptions): Promise<StreamEnd> {
  const write = (bytes: string | Buffer) => {
    if (res.destroyed) return true;
    // Once the upstream's [DONE] is in, what is left of its region waits for the closing events
    // and the end (which uncorks): one socket write instead of two.
    if (relay.done && !res.writableCorked) res.cork();
    return res.write(bytes);
  };
  const relay: SseRelay = new SseRelay({ detail: opts.detail, includeUsage: opts.includeUsage, model: ex.model.model, write, onFirstContent: opts.onFirstToken });
  const text = () => relay.text();
  try {
    // 1. Relay until [DONE] (or the end of a stream that already gave its finish reason).
    await pump(body, res, relay, opts.maxBytes, ex.model.model);
    relay.finish();
    // without [DONE], only an answer that gave its finish reason is complete
    if (!relay.done && !relay.finishReason()) throw streamCut(ex.model.model);
  } catch (err) {
    // 2a. Cut: bill what was generated, then tell the client (unless it is the one who left).
    const error = opts.signal.aborted ? cutError(opts.signal, ex.model.model) : err instanceof GatewayError ? err : mapTransportError(err, ex.model.model);
    const finishReason = opts.signal.reason === "client_abort" ? "client_abort" : opts.signal.reason === "shutdown" ? "shutdown" : "upstream_error";
    const settled = await settleAnswer(deps, ex, { text, usage: relay.usage, finishReason: () => finishReason, status: error.status });
    if (opts.signal.reason !== "client_abort") {
      write(opts.detail ? `event: error\ndata: ${JSON.stringify(error.toBody())}\n\n` : `data: ${JSON.stringify(error.toBody())}\n\n`);
    }
    return { settled, error };
  }

  // 2b. Settle (the turns are stored before the client sees the end), then close the stream.
  const settled = await settleAnswer(deps, ex, { text, usage: relay.usage, finishReason: () => relay.finishReason() ?? "stop" });
  settled.finishReason = relay.finishReason() ?? "stop"; // for the request log: found without parsing the answer
  if (opts.includeUsage && !relay.usage) write(`${opts.detail ? "event: answer\n" : ""}data: ${usageChunk(settled)}\n\n`);
  // FastGPT sends the chat's variables before its closing events, when it has any
  if (opts.detail && hasAny(ex.variables)) write(`event: updateVariables\ndata: ${JSON.stringify(ex.variables)}\n\n`);
  write(opts.detail ? "event: answer\ndata: [DONE]\n\n" : "data: [DONE]\n\n");
  if (opts.detail) write(`event: flowResponses\ndata: ${JSON.stringify([clientReport(ex, settled)])}\n\n`);
  // no res.end() here: the handler returns HANDLED and the server adapter ends the response once
  return { settled };
}

/** Feeds every chunk of `body` to the relay, pausing while the client is slow; resolves at the end. */
function pump(body: Readable, res: ServerResponse, relay: SseRelay, maxBytes: number, model: string): Promise<void> {
  return new Promise((resolve, reject) => new BodyPump(body, res, relay, maxBytes, model, resolve, reject).start());
}

// A class with bound methods rather than a handful of closures: one is made per streamed request.
class BodyPump {
  readonly #onData = this.#data.bind(this);
  readonly #onEnd = this.#end.bind(this);
  readonly #onError = this.#fail.bind(this);
  readonly #onDrain = () => this.body.resume();
  #bytes = 0;

  constructor(
    private readonly body: Readable,
    private readonly res: ServerResponse,
    private readonly relay: SseRelay,
    private readonly maxBytes: number,
    private readonly model: string,
    private readonly resolve: () => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  start(): void {
    this.body.on("data", this.#onData);
    this.body.once("end", this.#onEnd);
    this.body.once("error", this.#onError);
  }

  #data(chunk: Buffer): void {
    this.#bytes += chunk.length;
    if (this.#bytes > this.maxBytes) return this.#fail(answerTooLarge(this.model, this.maxBytes));
    try {
      if (!this.relay.push(chunk)) {
        this.body.pause();
        this.res.once("drain", this.#onDrain);
      }
      // the answer is complete: stop here; the rest of the body drains on its own
      if (this.relay.done) this.#end();
    } catch (err) {
      this.#fail(err);
    }
  }

  #end(): void {
    this.#detach();
    this.body.resume(); // keep the pooled connection reusable
    this.resolve();
  }

  #fail(err: unknown): void {
    this.#detach();
    // undici answers destroy() with an `error` event (UND_ERR_ABORTED): it must find a listener
    this.body.destroy();
    this.reject(err);
  }

  #detach(): void {
    this.body.off("data", this.#onData);
    this.body.off("end", this.#onEnd);
    this.body.off("error", this.#onError);
    // whatever the body still emits (a late socket error, the abort of destroy()) changes nothing now
    this.body.on("error", ignore);
    this.res.off("drain", this.#onDrain);
  }
}

function ignore(): void {}

/** A whole completion as SSE bytes, for an upstream that answered a stream request with JSON. */
export function completionAsSse(completion: CompletionJson): Readable {
  const { choices, usage, ...rest } = completion;
  const base = { ...rest, object: "chat.completion.chunk" };
  const choice = choices[0];
  const events = [
    { ...base, choices: [{ index: 0, delta: { role: "assistant", content: choice?.message?.content ?? "" }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: choice?.finish_reason ?? "stop" }], ...(usage ? { usage } : {}) },
  ];
  return Readable.from([...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), "data: [DONE]\n\n"].map((s) => Buffer.from(s)));
}

function usageChunk(s: Settled): string {
  return JSON.stringify({
    object: "chat.completion.chunk",
    choices: [],
    usage: { prompt_tokens: s.inputTokens, completion_tokens: s.outputTokens, total_tokens: s.inputTokens + s.outputTokens },
  });
}
