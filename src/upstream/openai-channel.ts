// A channel to an OpenAI-compatible model server, over one pooled undici client per channel.
import { Pool } from "undici";
import type { ChannelConfig } from "../config/schema.js";
import { badUpstreamReply, mapTransportError, upstreamStatus } from "./errors.js";
import type { ChannelClient, CompletionJson, UpstreamAnswer, UpstreamRequest } from "./types.js";

const MAX_ERROR_BODY = 64 * 1024;

/** `{baseUrl}/v1/chat/completions`, without doubling a `/v1` the base already ends in. */
function completionsUrl(baseUrl: string): URL {
  const base = baseUrl.replace(/\/+$/, "");
  return new URL(/\/v1$/.test(base) ? `${base}/chat/completions` : `${base}/v1/chat/completions`);
}

export function createOpenAIChannel(channel: ChannelConfig): ChannelClient {
  const url = completionsUrl(channel.baseUrl);
  const pool = new Pool(url.origin, {
    connections: channel.connections,
    headersTimeout: channel.firstByteTimeoutMs,
    bodyTimeout: channel.idleTimeoutMs,
    keepAliveTimeout: 30_000,
  });
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...(channel.key ? { authorization: `Bearer ${channel.key}` } : {}),
  };

  async function send(req: UpstreamRequest): Promise<UpstreamAnswer> {
    const model = String(req.body.model);
    let res;
    try {
      res = await pool.request({
        path: url.pathname + url.search,
        method: "POST",
        headers,
        body: JSON.stringify(req.body),
        signal: req.signal,
      });
    } catch (err) {
      throw mapTransportError(err, model);
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      await discard(res.body);
      throw upstreamStatus(model, res.statusCode);
    }
    const type = String(res.headers["content-type"] ?? "");
    if (req.stream && type.includes("text/event-stream")) {
      return { kind: "stream", body: res.body };
    }
    let completion: CompletionJson;
    try {
      completion = (await res.body.json()) as CompletionJson;
    } catch (err) {
      throw (err as { code?: string }).code ? mapTransportError(err, model) : badUpstreamReply(model);
    }
    if (!completion || !Array.isArray(completion.choices)) throw badUpstreamReply(model);
    return { kind: "json", completion };
  }

  return { name: channel.name, send, close: () => pool.close() };
}

/** Reads and drops an error body (bounded), so the connection can be reused. */
async function discard(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<void> {
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > MAX_ERROR_BODY) return body.destroy();
    }
  } catch {
    // an error reply that also breaks off: nothing more to learn from it
  }
}
