// An HTTP request as a metered call's inbound (./inbound.ts): read from its H3Event, answered on
// its Node response (through a tee when a tap reads the answer: http/answer-out.ts).
import type { H3Event } from "h3";
import { answerOut, teeAnswer, type AnswerListener, type AnswerOut } from "../http/answer-out.js";
import { readJsonBody, type BodyLimits } from "../http/body.js";
import type { Cancel } from "../http/cancel.js";
import { clientAddress } from "../http/client-address.js";
import { factsOf, type RequestFacts } from "../http/facts.js";
import { trackRequest, type Inflight } from "../http/inflight.js";
import { sendJsonParts } from "../http/json.js";
import { writeToNode, type Reply } from "../http/node.js";
import { onFastgptRoute } from "../http/route-flags.js";
import type { Inbound, RequestParts } from "./inbound.js";
import { requestParts } from "./spec.js";

/** An HTTP request, answered on its Node response. */
export class HttpInbound implements Inbound {
  readonly facts: RequestFacts;
  constructor(readonly event: H3Event) {
    this.facts = factsOf(event);
  }
  get headers(): Headers {
    return this.event.req.headers;
  }
  get path(): string {
    return this.event.url.pathname;
  }
  get fastgpt(): boolean {
    return onFastgptRoute(this.event);
  }
  address(trustProxy: number): string {
    return clientAddress(this.event, trustProxy);
  }
  parts<Body>(body: Body): RequestParts<Body> {
    return requestParts(this.event, body);
  }
  track(inflight: Inflight): { cancel: Cancel; untrack: () => void } {
    return trackRequest(this.event, inflight);
  }
  readJson(limits: BodyLimits, cancel: Cancel, rawTexts: boolean, check?: (raw: Buffer) => void): Promise<unknown> {
    return readJsonBody(this.event, limits, cancel, rawTexts, check);
  }
  jsonParts(parts: Buffer[]): Reply | Promise<Reply> {
    return sendJsonParts(this.event, parts);
  }
  stream(write: (out: AnswerOut) => Promise<void>): Promise<Reply> | undefined {
    const out = answerOut(this.event);
    return out && writeToNode(this.event, () => write(out));
  }
  tee(listener: AnswerListener): void {
    teeAnswer(this.event, listener);
  }
}
