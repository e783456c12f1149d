// What the relays read of an upstream's Chat Completions stream (docs/architecture.md#streams): a
// chunk, parsed, and the usage it reports.

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
  error?: unknown;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
  [key: string]: unknown;
}
