// The layers of an OpenAI-compatible channel (docs/architecture.md#channel-layers), outermost first:
// the status of a reply made the channel failure (its message redacted), the connection gate, vLLM's
// forwarded priority, the channel's model mapping. Each applies only where the channel's config asks
// for it; the transport below (./openai-channel.ts) posts bytes.
import type { Readable } from "node:stream";
import { channelBusy, mapTransportError, upstreamStatus } from "./errors.js";
import { withPriorityField } from "./forward-priority.js";
import { type ConnectionGate, GateRefused } from "./gate.js";
import type { Layer } from "./layers.js";
import { mapRequestModel, unmapAnswerModel } from "./model-mapping.js";
import { readLimited } from "./read.js";
import type { PostRequest, UpstreamChannelConfig } from "./types.js";

const MAX_ERROR_BODY = 64 * 1024;
export const JSON_TYPE = "application/json";

/** A reply other than 2xx becomes the channel failure (an UpstreamError), its message through
 *  `redact` (the channel's secrets out: docs/api.md#upstream-failures). */
export function statusErrors(redact: (body: string) => string | undefined): Layer {
  return (next) => async (req) => {
    const reply = await next(req);
    if (reply.status >= 200 && reply.status < 300) return reply;
    const error = await readLimited(reply.body, MAX_ERROR_BODY).then(String, () => "");
    const retryAfter = reply.headers["retry-after"];
    throw upstreamStatus(req.model, reply.status, redact(error), Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
  };
}

/** Every post through the channel's connection gate: its slot held until the reply's body closes;
 *  a transport failure is the channel failure. */
export function gated(gate: ConnectionGate): Layer {
  return (next) => async (req) => {
    const release = await gate.acquire(req.signal, req.ticket, req.attempt).catch((err: unknown) => {
      throw err instanceof GateRefused && err.reason === "busy" ? channelBusy(req.model) : mapTransportError(err, req.model);
    });
    try {
      const reply = await next(req);
      reply.body.once("close", release);
      return reply;
    } catch (err) {
      release();
      throw mapTransportError(err, req.model);
    }
  };
}

/** vLLM's `priority` in the JSON body (lower runs first: the caller's negated), for a channel that
 *  forwards it (`channels[].forwardPriority`, docs/routing.md#priority-and-fairness). */
export function forwardedPriority(channel: UpstreamChannelConfig): Layer | undefined {
  if (!channel.forwardPriority) return undefined;
  return (next) => (req) => {
    if (typeof req.body !== "function" && req.ticket !== undefined && (req.contentType ?? JSON_TYPE) === JSON_TYPE) {
      req.body = withPriorityField(req.body, -(req.ticket.priority ?? 0));
    }
    return next(req);
  };
}

/** The model's name on this server (`channels[].modelMapping`), out in the request and back in a
 *  2xx answer. */
export function modelMapping(channel: UpstreamChannelConfig): Layer | undefined {
  const mapping = channel.modelMapping;
  if (Object.keys(mapping).length === 0) return undefined;
  return (next) => async (req: PostRequest) => {
    const mapped = mapping[req.model];
    if (mapped === undefined) return next(req);
    if (typeof req.body !== "function") req.body = mapRequestModel(req.body, req.model, mapped);
    const reply = await next(req);
    if (reply.status >= 200 && reply.status < 300) reply.body = unmapAnswerModel(reply.body as Readable, mapped, req.model);
    return reply;
  };
}
