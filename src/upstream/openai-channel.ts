// A channel to an OpenAI-compatible model server, over one pooled undici client per channel, behind
// a connection gate that bounds the calls waiting for a connection. It posts what a kind gives it
// and hands back the answer's bytes; it reads no payload (docs/architecture.md#transport).
import type { Readable } from "node:stream";
import { Pool, request } from "undici";
import type { AddressGuard } from "./address-guard.js";
import { channelBusy, mapTransportError, redactUpstreamMessage, upstreamStatus } from "./errors.js";
import { withPriorityField } from "./forward-priority.js";
import { ConnectionGate, GateRefused, type GateOptions } from "./gate.js";
import { mapRequestModel, unmapAnswerModel } from "./model-mapping.js";
import { readLimited } from "./read.js";
import type { ChannelClient, PostRequest, UpstreamChannelConfig, UpstreamReply } from "./types.js";

const MAX_ERROR_BODY = 64 * 1024;
const JSON_TYPE = "application/json";
const ACCEPT = "application/json, text/event-stream, */*";

/** The channel's `/v1` path: a baseUrl already ending in `/v1` is not doubled. */
function apiBase(baseUrl: string): URL {
  const base = baseUrl.replace(/\/+$/, "");
  return new URL(/\/v1$/.test(base) ? base : `${base}/v1`);
}

/** What the channel's queue tells: its depth as it changes, each granted call's wait. */
export type QueueHooks = Pick<GateOptions, "onDepth" | "onWait">;

/** `guard`: where it may connect (docs/configuration.md#top-level `allowLinkLocalChannels`); absent: anywhere. */
export function createOpenAIChannel(channel: UpstreamChannelConfig, hooks: QueueHooks = {}, guard?: AddressGuard): ChannelClient {
  const base = channel.endpoint ? new URL(channel.baseUrl) : apiBase(channel.baseUrl);
  const pool = new Pool(base.origin, {
    ...(guard && { connect: guard.connect }),
    connections: channel.connections,
    headersTimeout: channel.firstByteTimeoutMs,
    bodyTimeout: channel.idleTimeoutMs,
    keepAliveTimeout: 30_000,
  });
  const gate = new ConnectionGate({
    // `concurrency` below the pool's size: the queue is the gateway's, where it is ordered
    connections: channel.concurrency > 0 ? Math.min(channel.concurrency, channel.connections) : channel.connections,
    maxQueue: channel.maxQueue,
    queueTimeoutMs: channel.queueTimeoutMs,
    agingMs: channel.agingMs,
    ...hooks,
  });
  const auth = channel.key ? { authorization: `Bearer ${channel.key}` } : {};
  // header objects made once per content type: undici reads them on every request
  const jsonHeaders = { "content-type": JSON_TYPE, accept: ACCEPT, ...auth };
  const headersFor = (type: string | undefined) => (type === undefined || type === JSON_TYPE ? jsonHeaders : { "content-type": type, accept: ACCEPT, ...auth });
  // no content-type at all, not an undefined one: undici makes each such request far costlier
  const checkHeaders = { accept: ACCEPT, ...auth };
  const secrets = channel.key ? [channel.key] : [];
  // worked out once: URL's getters are slow enough to show in a profile when read per request
  const basePath = base.pathname.replace(/\/+$/, "");
  const search = base.search;
  const paths = new Map<string, string>();
  // a model's own endpoint is posted to exactly as configured, trailing slash and query included
  const endpointPath = `${base.pathname}${search}`;
  const pathOf = channel.endpoint
    ? () => endpointPath
    : (path: string) => paths.get(path) ?? (paths.set(path, `${basePath}${path}${search}`).get(path) as string);

  /** POSTs through the gate; a 2xx reply, else the channel failure. */
  async function post(req: PostRequest): Promise<UpstreamReply> {
    const { model, signal } = req;
    const release = await gate.acquire(signal, req.ticket).catch((err: unknown) => {
      throw err instanceof GateRefused && err.reason === "busy" ? channelBusy(model) : mapTransportError(err, model);
    });
    let res;
    try {
      const mapped = channel.modelMapping[model];
      const given = typeof req.body === "function" ? req.body() : forward(req);
      const body = mapped === undefined ? given : mapRequestModel(given, model, mapped);
      const headers = req.headers ? { ...headersFor(req.contentType), ...req.headers } : headersFor(req.contentType);
      res = await pool.request({ path: pathOf(req.path), method: "POST", headers, body, signal });
    } catch (err) {
      release();
      throw mapTransportError(err, model);
    }
    const body = res.body as unknown as Readable;
    body.on("error", ignore); // errors are read where the body is consumed; none may go unheard
    body.once("close", release);
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const error = await readLimited(body, MAX_ERROR_BODY).then(String, () => "");
      const retryAfter = res.headers["retry-after"];
      throw upstreamStatus(model, res.statusCode, redactUpstreamMessage(error, secrets), Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
    }
    const mapped = channel.modelMapping[model];
    const answer = mapped === undefined ? body : unmapAnswerModel(body, mapped, model);
    return { status: res.statusCode, headers: res.headers, body: answer, maxBytes: channel.maxAnswerBytes };
  }

  /** The body, with vLLM's `priority` (lower runs first: the caller's negated) when the channel forwards it. */
  function forward(req: PostRequest): string | Buffer {
    const body = req.body as string | Buffer;
    if (!channel.forwardPriority || req.ticket === undefined || (req.contentType ?? JSON_TYPE) !== JSON_TYPE) return body;
    return withPriorityField(body, -(req.ticket.priority ?? 0));
  }

  const modelsUrl = new URL(`${basePath}/models`, base.origin);
  async function check(timeoutMs: number): Promise<boolean> {
    try {
      const res = await request(modelsUrl, { method: "GET", headers: checkHeaders, signal: AbortSignal.timeout(timeoutMs), ...(guard && { dispatcher: guard.dispatcher }) });
      await res.body.dump();
      return res.statusCode >= 200 && res.statusCode < 300;
    } catch {
      return false;
    }
  }

  return { name: channel.name, post, check, close: () => pool.close(), load: () => ({ active: gate.active, queued: gate.queued }), hasRoom: () => gate.hasRoom() };
}

function ignore(): void {}
