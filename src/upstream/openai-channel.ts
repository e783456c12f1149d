// A channel to an OpenAI-compatible model server, over one pooled undici client per channel, behind
// a connection gate that bounds the calls waiting for a connection. It posts what a kind gives it
// and hands back the answer's bytes; it reads no payload (docs/architecture.md#transport). Its
// policies are layers (./channel-layers.ts) composed over the transport, once per channel.
import type { Readable } from "node:stream";
import { Pool, request } from "undici";
import type { AddressGuard } from "./address-guard.js";
import { forwardedPriority, gated, JSON_TYPE, modelMapping, statusErrors } from "./channel-layers.js";
import { redactUpstreamMessage } from "./errors.js";
import { ConnectionGate, type GateOptions } from "./gate.js";
import { compose, type ChannelLayer } from "./layers.js";
import { routedBy } from "./router-headers.js";
import type { ChannelClient, PostRequest, UpstreamChannelConfig, UpstreamReply } from "./types.js";

const ACCEPT = "application/json, text/event-stream, */*";

/** The channel's `/v1` path: a baseUrl already ending in `/v1` is not doubled. */
function apiBase(baseUrl: string): URL {
  const base = baseUrl.replace(/\/+$/, "");
  return new URL(/\/v1$/.test(base) ? base : `${base}/v1`);
}

/** What the channel's queue tells: its depth as it changes, each granted call's wait. */
export type QueueHooks = Pick<GateOptions, "onDepth" | "onWait">;

/** `guard`: where it may connect (docs/configuration.md#top-level `allowLinkLocalChannels`); absent: anywhere. */
/** `extra`: layers for every channel, between the status layer and the gate (RouterOptions.layers). */
export function createOpenAIChannel(channel: UpstreamChannelConfig, hooks: QueueHooks = {}, guard?: AddressGuard, extra: readonly ChannelLayer[] = []): ChannelClient {
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

  /** The transport: the request's bytes posted, the reply's status, headers and body as they come. */
  async function transport(req: PostRequest): Promise<UpstreamReply> {
    const body = typeof req.body === "function" ? req.body() : req.body;
    const headers = req.headers ? { ...headersFor(req.contentType), ...req.headers } : headersFor(req.contentType);
    const res = await pool.request({ path: pathOf(req.path), method: "POST", headers, body, signal: req.signal });
    const answer = res.body as unknown as Readable;
    answer.on("error", ignore); // errors are read where the body is consumed; none may go unheard
    return { status: res.statusCode, headers: res.headers, body: answer, maxBytes: channel.maxAnswerBytes };
  }
  // composed once: a post runs through plain calls (docs/architecture.md#channel-layers)
  const post = compose([statusErrors((text) => redactUpstreamMessage(text, secrets)), ...extra.map((layer) => layer(channel)), gated(gate), forwardedPriority(channel), modelMapping(channel), routedBy(channel)], transport);

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

  return { name: channel.name, post, check, close: () => pool.close(), load: () => ({ active: gate.active, queued: gate.queued, preemptible: gate.preemptible }), hasRoom: () => gate.hasRoom(), gate };
}

function ignore(): void {}
