import type { Readable } from "node:stream";
import type { EmbeddingsAnswer } from "../embeddings/answer.js";
import type { Cancel } from "../http/cancel.js";

// What a channel gives back, whatever the channel is (an OpenAI-compatible server or the echo demo).

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
}

/** A non-stream answer: the upstream's chat.completion object. */
export interface CompletionJson {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices: Array<{ index?: number; message?: { role?: string; content?: string | null }; finish_reason?: string | null }>;
  usage?: Usage | null;
  [key: string]: unknown;
}

export type UpstreamAnswer =
  | { kind: "json"; completion: CompletionJson }
  /** the upstream's SSE bytes, as they arrive */
  | { kind: "stream"; body: Readable; /** the answer is cut past this many bytes */ maxBytes: number };

export interface UpstreamRequest {
  body: Record<string, unknown>;
  stream: boolean;
  /** fires when the client went away */
  signal: Cancel;
}

export interface EmbeddingsCall {
  body: Record<string, unknown>;
  signal: Cancel;
}

export interface ChannelClient {
  readonly name: string;
  send(req: UpstreamRequest): Promise<UpstreamAnswer>;
  /** `POST /v1/embeddings`: the answer's bytes, checked to hold one vector per input */
  embed(req: EmbeddingsCall): Promise<EmbeddingsAnswer>;
  close(): Promise<void>;
  /** calls holding a connection and calls waiting for one */
  load?(): { active: number; queued: number };
  /** a health check: resolves true when the server answered 2xx within `timeoutMs` (never rejects) */
  check?(timeoutMs: number): Promise<boolean>;
}
