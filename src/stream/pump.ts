// Feeds an upstream's streamed answer to whatever relays it (docs/architecture.md#streams): each chunk
// as it arrives, the upstream paused while the client is slow, the answer cut past the channel's
// maxAnswerBytes, the pooled connection kept reusable once the answer is complete.
import type { AnswerOut } from "../http/answer-out.js";
import type { Readable } from "node:stream";
import type { Cancel } from "../http/cancel.js";
import { GatewayError } from "../http/errors.js";
import { answerTooLarge, attemptCut, mapTransportError, streamCut } from "../upstream/errors.js";

/** What turns upstream SSE bytes into the client's: the byte relay of the chat path, or a dialect's. */
export interface SseSink {
  /** Feeds upstream bytes; returns what the client write returned (false: wait for drain). */
  push(chunk: Buffer): boolean;
  /** the upstream's [DONE] was seen: the answer is complete */
  readonly done: boolean;
}

/** A sink that knows when an answer without [DONE] is complete anyway: it gave its finish reason. */
export interface AnswerSink extends SseSink {
  /** the upstream ended: anything left unterminated is taken as a last event */
  finish(): void;
  finishReason(): string | undefined;
}

/**
 * Relays a whole streamed answer into `sink`; resolves with the error that cut it (as the client is
 * to be told: the client left, a deadline, shutdown, the upstream breaking off), or undefined when
 * it completed.
 */
export async function relayAnswer(body: Readable, res: AnswerOut, sink: AnswerSink, maxBytes: number, cancel: Cancel, model: string): Promise<GatewayError | undefined> {
  try {
    await pump(body, res, sink, maxBytes, model);
    sink.finish();
    // without [DONE], only an answer that gave its finish reason is complete
    if (!sink.done && !sink.finishReason()) throw streamCut(model);
    return undefined;
  } catch (err) {
    return cancel.aborted ? attemptCut(cancel, model) : err instanceof GatewayError ? err : mapTransportError(err, model);
  }
}

/** Feeds every chunk of `body` to the relay, pausing while the client is slow; resolves at the end. */
export function pump(body: Readable, res: AnswerOut, relay: SseSink, maxBytes: number, model: string): Promise<void> {
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
    private readonly res: AnswerOut,
    private readonly relay: SseSink,
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
