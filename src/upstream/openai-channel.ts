// A channel to an OpenAI-compatible model server (chat completions and embeddings), over one pooled
// undici client per channel, behind a connection gate that bounds the calls waiting for a connection.
import { Pool, request } from "undici";
import type { ChannelConfig } from "../config/schema.js";
import type { Cancel } from "../http/cancel.js";
import { jsonBody } from "../http/raw-text.js";
import { answerTooLarge, badUpstreamReply, channelBusy, mapTransportError, redactUpstreamMessage, upstreamStatus } from "./errors.js";
import { ConnectionGate, GateRefused } from "./gate.js";
import { scanEmbeddings, type EmbeddingsAnswer } from "../embeddings/answer.js";
import { inputItems, type EmbeddingInput } from "../embeddings/request-schema.js";
import type { ChannelClient, CompletionJson, EmbeddingsCall, UpstreamAnswer, UpstreamRequest } from "./types.js";

const MAX_ERROR_BODY = 64 * 1024;

type Body = AsyncIterable<Buffer> & { destroy(): void; once(event: "close", listener: () => void): unknown; on(event: "error", l: () => void): unknown };

/** `{baseUrl}/v1/chat/completions`, without doubling a `/v1` the base already ends in. */
function completionsUrl(baseUrl: string): URL {
  const base = baseUrl.replace(/\/+$/, "");
  return new URL(/\/v1$/.test(base) ? `${base}/chat/completions` : `${base}/v1/chat/completions`);
}

export function createOpenAIChannel(channel: ChannelConfig, onQueueDepth?: (depth: number) => void): ChannelClient {
  const url = completionsUrl(channel.baseUrl);
  const pool = new Pool(url.origin, {
    connections: channel.connections,
    headersTimeout: channel.firstByteTimeoutMs,
    bodyTimeout: channel.idleTimeoutMs,
    keepAliveTimeout: 30_000,
  });
  const gate = new ConnectionGate({
    connections: channel.connections,
    maxQueue: channel.maxQueue,
    queueTimeoutMs: channel.queueTimeoutMs,
    onDepth: onQueueDepth,
  });
  const auth = channel.key ? { authorization: `Bearer ${channel.key}` } : {};
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", ...auth };
  // no content-type at all, not an undefined one: undici makes each such request far costlier
  const checkHeaders = { accept: headers.accept, ...auth };
  const secrets = channel.key ? [channel.key] : [];

  /** POSTs `payload` to `path` through the gate; a 2xx answer's response, else the §9 error. */
  async function post(path: string, payload: Record<string, unknown>, signal: Cancel) {
    const model = String(payload.model);
    // serialized before any network step: a body that cannot be sent is never the channel's fault
    const text = jsonBody(payload);
    const release = await gate.acquire(signal).catch((err: unknown) => {
      throw err instanceof GateRefused && err.reason === "busy" ? channelBusy(model) : mapTransportError(err, model);
    });
    let res;
    try {
      res = await pool.request({ path, method: "POST", headers, body: text, signal });
    } catch (err) {
      release();
      throw mapTransportError(err, model);
    }
    const body = res.body as unknown as Body;
    body.on("error", ignore); // errors are read where the body is consumed; none may go unheard
    body.once("close", release);
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const error = await readLimited(body, MAX_ERROR_BODY).then(String, () => "");
      const retryAfter = res.headers["retry-after"];
      throw upstreamStatus(model, res.statusCode, redactUpstreamMessage(error, secrets), Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
    }
    return { model, res, body };
  }

  // worked out once: URL's getters are slow enough to show in a profile when read per request
  const completionsPath = url.pathname + url.search;
  async function send(req: UpstreamRequest): Promise<UpstreamAnswer> {
    const { model, res, body } = await post(completionsPath, req.body, req.signal);
    const type = String(res.headers["content-type"] ?? "");
    if (req.stream && type.includes("text/event-stream")) {
      return { kind: "stream", body: res.body, maxBytes: channel.maxAnswerBytes };
    }
    return { kind: "json", completion: await readAnswer(body, model, channel.maxAnswerBytes, isCompletion) };
  }

  const embeddingsPath = url.pathname.replace(/\/chat\/completions$/, "/embeddings") + url.search;
  async function embed(req: EmbeddingsCall): Promise<EmbeddingsAnswer> {
    const { model, body } = await post(embeddingsPath, req.body, req.signal);
    // the vectors are passed on as bytes: only the answer's top level is read (./embeddings/answer.ts)
    const answer = scanEmbeddings(await readBody(body, model, channel.maxAnswerBytes), inputItems(req.body.input as EmbeddingInput).length);
    if (!answer) throw badUpstreamReply(model);
    return answer;
  }

  const modelsUrl = new URL(url.pathname.replace(/\/chat\/completions$/, "/models"), url.origin);
  async function check(timeoutMs: number): Promise<boolean> {
    try {
      const res = await request(modelsUrl, { method: "GET", headers: checkHeaders, signal: AbortSignal.timeout(timeoutMs) });
      await res.body.dump();
      return res.statusCode >= 200 && res.statusCode < 300;
    } catch {
      return false;
    }
  }

  return { name: channel.name, send, embed, check, close: () => pool.close(), load: () => ({ active: gate.active, queued: gate.queued }) };
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object";
const isCompletion = (v: unknown): v is CompletionJson => isObject(v) && Array.isArray(v.choices);

/** The answer's JSON, when it has the expected shape; anything else is the upstream's fault (502). */
async function readAnswer<T>(body: Body, model: string, limit: number, valid: (v: unknown) => v is T): Promise<T> {
  const text = (await readBody(body, model, limit)).toString("utf8");
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw badUpstreamReply(model);
  }
  if (!valid(answer)) throw badUpstreamReply(model);
  return answer;
}

/** The whole answer body; past `limit` bytes it is the upstream's fault (502). */
async function readBody(body: Body, model: string, limit: number): Promise<Buffer> {
  try {
    return await readLimited(body, limit);
  } catch (err) {
    if (err instanceof TooLarge) throw answerTooLarge(model, limit);
    throw mapTransportError(err, model);
  }
}

class TooLarge extends Error {}

/** The body's bytes; past `limit` bytes the body is destroyed and TooLarge thrown. */
async function readLimited(body: Body, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new TooLarge();
    }
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

function ignore(): void {}

