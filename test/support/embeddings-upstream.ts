// A small real OpenAI-compatible embeddings server (node:http) for tests: POST …/v1/embeddings
// answers one fixed vector per input (floats, or base64 when asked), records what it was sent, and
// answers an error status on demand — or, as vLLM started without `--scheduling-policy priority`,
// 400 to any body carrying a `priority`.
import { startJsonServer } from "./json-server.js";
import { float32Base64 } from "../../src/demo/echo-channel.js";

export interface EmbeddingsBehaviour {
  /** 200 answers vectors; anything else an OpenAI error body with this status */
  status: number;
  /** `usage.prompt_tokens` to report; false leaves `usage` out */
  promptTokens: number | false;
  /** sent as Retry-After with an error status */
  retryAfter?: string;
  /** refuse (400) any body with a `priority` field, as vLLM without the priority policy */
  refusePriority?: boolean;
}

export interface EmbeddingsUpstream {
  url: string;
  /** parsed bodies of the embeddings requests, in order */
  requests: Array<Record<string, unknown>>;
  behave(change: Partial<EmbeddingsBehaviour>): void;
  close(): Promise<void>;
}

/** vLLM's answer to a request's `priority` when it was not started with the priority policy. */
export const PRIORITY_REFUSAL = { object: "error", message: "Priority scheduling is not enabled.", type: "BadRequestError", param: null, code: 400 };

/** The vector every input gets, whatever it is. */
export const UPSTREAM_VECTOR = [0.25, -0.5, 0.75];

export async function startEmbeddingsUpstream(initial: Partial<EmbeddingsBehaviour> = {}): Promise<EmbeddingsUpstream> {
  let b: EmbeddingsBehaviour = { status: 200, promptTokens: 42, ...initial };
  const requests: Array<Record<string, unknown>> = [];
  const server = await startJsonServer("/v1/embeddings", (body, res) => {
    requests.push(body);
    if (b.refusePriority && "priority" in body) {
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify(PRIORITY_REFUSAL));
      return;
    }
    if (b.status !== 200) {
      res.writeHead(b.status, { "content-type": "application/json", ...(b.retryAfter ? { "retry-after": b.retryAfter } : {}) });
      res.end(JSON.stringify({ error: { message: `embedding failed with ${b.status}` } }));
      return;
    }
    const input = body.input;
    const count = typeof input === "string" || typeof (input as unknown[])[0] === "number" ? 1 : (input as unknown[]).length;
    const embedding = body.encoding_format === "base64" ? float32Base64(UPSTREAM_VECTOR) : UPSTREAM_VECTOR;
    const data = Array.from({ length: count }, (_, index) => ({ object: "embedding", index, embedding }));
    const usage = b.promptTokens === false ? {} : { usage: { prompt_tokens: b.promptTokens, total_tokens: b.promptTokens } };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data, model: body.model, ...usage }));
  });
  return { url: server.url, requests, behave: (change) => (b = { ...b, ...change }), close: server.close };
}

/** The floats of a base64 embedding. */
export function fromBase64(text: string): number[] {
  const bytes = Buffer.from(text, "base64");
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}
