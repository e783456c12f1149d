// The dialect interface of the one metered pipeline (docs/codex.md#how-sluice-serves-it), written
// here until the pipeline's own copy lands: a request translation into a chat request, and an answer
// and a stream translation out of the upstream's Chat Completions answer.
import type { ChatRequest } from "../../chat/request-schema.js";
import type { GatewayError } from "../../http/errors.js";
import type { CompletionJson } from "../../chat/attempt.js";

/** The upstream's streamed chunk, parsed: OpenAI `chat.completion.chunk`. */
export interface ChatChunk {
  id?: string;
  model?: string;
  choices?: Array<{
    index?: number;
    delta?: {
      role?: string;
      content?: string | null;
      /** vLLM / DeepSeek / Qwen reasoning (newer vLLM: `reasoning`) */
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: Array<{ index: number; id?: string; type?: "function"; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
  }>;
  usage?: { prompt_tokens: number; completion_tokens: number; completion_tokens_details?: { reasoning_tokens?: number } } | null;
}

export interface DialectUsage {
  input: number;
  output: number;
  reasoning?: number;
}

export interface StreamTranslator {
  /** what is written when the answer starts */
  begin(): string;
  /** one parsed upstream chunk → the dialect's SSE events ("" when none) */
  chunk(chunk: ChatChunk): string;
  /** the upstream finished normally: the closing events */
  end(finishReason: string, usage: DialectUsage): string;
  /** a failure after the first byte: the dialect's error events — never the clean end */
  fail(err: GatewayError): string;
}

export interface ChatDialect<Ctx> {
  route: string;
  readKey(headers: Headers): string | undefined;
  toChat(body: unknown): { chat: ChatRequest; ctx: Ctx };
  answer(completion: CompletionJson, usage: DialectUsage, ctx: Ctx): unknown;
  stream(ctx: Ctx): StreamTranslator;
  error(err: GatewayError): { status: number; body: unknown; headers: Record<string, string> };
}

/** What an upstream's chat.completion message may hold beyond `content` (CompletionJson types only that). */
export interface ChatAnswerMessage {
  role?: string;
  content?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: Array<{ id?: string; type?: string; function?: { name?: string; arguments?: string } }> | null;
}
