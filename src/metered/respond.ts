// The pipeline's last steps (docs/architecture.md#pipeline): the kind's answer given and the request
// settled — a whole answer settled before its reply is made; a streamed one relayed through the
// kind's sink (first token timed, backpressure, the channel's answer cap), settled for what was
// generated whether it completed or was cut, then closed with the kind's closing events or ended
// with its error event. No kind settles for itself: it says what its answer used.
import { cutFinishReason, type Cancel } from "../http/cancel.js";
import { GatewayError, toGatewayError } from "../http/errors.js";
import type { RequestFacts } from "../http/facts.js";
import type { AnswerOut } from "../http/answer-out.js";
import type { Reply } from "../http/node.js";
import { relayAnswer } from "../stream/pump.js";
import { UpstreamError } from "../upstream/errors.js";
import type { Inbound } from "./inbound.js";
import type { Meter } from "./meter.js";
import { isStreamed, type Streamed, type Whole } from "./spec.js";

/** What the answer steps know of the request. */
export interface Answering {
  inbound: Inbound;
  meter: Meter;
  cancel: Cancel;
  facts: RequestFacts;
  model: string;
  /** performance.now() at arrival: the time to first token counts from here */
  started: number;
}

/** 8–9. The answer given, and what it used settled. */
export async function answer(a: Answering, given: Whole | Streamed): Promise<Reply> {
  if (!isStreamed(given)) {
    await a.meter.settle(given.used);
    return await given.reply();
  }
  const written = a.inbound.stream((out) => stream(a, given, out));
  if (!written) throw new GatewayError(500, "stream_unsupported", "Streaming needs the Node server adapter.", { type: "server_error" });
  return written;
}


/** A streamed answer: its head, its body relayed, what it used settled (complete or cut), then its
 *  closing events — or, should it fail after the head, the kind's error event (unless the client is
 *  the one who left). Never throws: the head is out. */
async function stream(a: Answering, s: Streamed, res: AnswerOut): Promise<void> {
  const { facts, cancel } = a;
  res.writeHead(200, s.headers); // x-request-id and CORS: set on the response by the route wrapper
  // 1. Relay until the answer is complete (or cut), timing its first content.
  const sink = s.sink(res, () => (facts.ttftMs ??= performance.now() - a.started));
  const cut = await relayAnswer(s.body, res, sink, s.maxBytes, cancel, a.model);
  // 2. Settle what was generated, complete or cut.
  let failed = cut;
  try {
    const finishReason = cutFinishReason(cancel);
    const used = await s.used(cut && { error: cut, finishReason });
    await a.meter.settle(cut ? { ...used, finishReason } : used, cut);
  } catch (err) {
    failed ??= toGatewayError(err);
    await a.meter.fail(failed.status, failed);
  }
  // 3. The closing events, or the error event that ends a failed stream.
  if (!failed) {
    const end = s.end?.();
    if (end && !res.destroyed) res.write(end);
    return; // no res.end() here: h3 ends the response once the writer is done
  }
  if (failed instanceof UpstreamError && failed.detail) facts.upstreamMessage = failed.detail;
  facts.errorCode = failed.code;
  if (cancel.reason === "client_abort" || res.destroyed) return;
  if (s.error) res.write(s.error(failed));
  // a declared length broken off, not ended short: the client sees the answer is incomplete
  else if (s.headers["content-length"] !== undefined) res.destroy();
}
