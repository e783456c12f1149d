// The dialect interface of the metered pipeline (docs/claude-code.md#how-sluice-serves-it), as this
// dialect implements it. The pipeline will own these declarations; they live here until it does.
import type { GatewayError } from "../../http/errors.js";

/** The upstream's streamed chunk, parsed: OpenAI `chat.completion.chunk`. */
export interface ChatChunk {
  id?: string;
  model?: string;
  choices?: Array<{
    index?: number;
    delta?: {
      role?: string;
      content?: string | null;
      /** vLLM / DeepSeek / Qwen reasoning; newer vLLM calls it `reasoning` */
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: Array<{ index: number; id?: string; type?: "function"; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
    /** vLLM: the stop string (or token id) that ended the answer */
    stop_reason?: string | number | null;
  }>;
  usage?: { prompt_tokens: number; completion_tokens: number; completion_tokens_details?: { reasoning_tokens?: number } } | null;
}

export interface DialectUsage {
  input: number;
  output: number;
  reasoning?: number;
}

export interface StreamTranslator {
  /** what is written when the answer starts; `inputTokens` when the pipeline knows the prompt's count */
  begin(inputTokens?: number): string;
  /** one parsed upstream chunk → SSE events ("" when none) */
  chunk(chunk: ChatChunk): string;
  /** the upstream finished normally: closing events */
  end(finishReason: string, usage: DialectUsage): string;
  /** a failure after the first byte: the dialect's error event — never the clean end */
  fail(err: GatewayError): string;
  /** a keep-alive event for a long silence (Anthropic's `ping`) */
  heartbeat(): string;
}

export interface DialectError {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}
