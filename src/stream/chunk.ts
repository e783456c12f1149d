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

/** The id and model an answer reports, for the trace (docs/tracing.md#spans). */
export interface AnswerNames {
  id?: string;
  model?: string;
}

/** At most this many characters of a name an upstream reports are kept. */
const MAX_NAME = 256;
const nameOf = (value: unknown) => (typeof value === "string" && value !== "" ? value.slice(0, MAX_NAME) : undefined);

/** The answer's (or a chunk's) `id` and `model`, where they are strings: an upstream is not trusted
 *  to send either, nor to keep them short. */
export function answerNames(answer: { id?: unknown; model?: unknown } | null | undefined): AnswerNames {
  return { id: nameOf(answer?.id), model: nameOf(answer?.model) };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
  [key: string]: unknown;
}
