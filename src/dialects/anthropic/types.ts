// The pipeline's dialect types (src/chat/dialect.ts), as this dialect uses them: its stream
// translator also writes Anthropic's `ping` and takes the prompt's tokens when known.
import type { StreamTranslator } from "../../chat/dialect.js";

export type { ChatChunk, DialectUsage } from "../../chat/dialect.js";
export type { ErrorReply as DialectError } from "../../http/errors.js";

export interface AnthropicStreamTranslator extends StreamTranslator {
  /** what is written when the answer starts; `inputTokens` when the pipeline knows the prompt's count */
  begin(inputTokens?: number): string;
  /** a keep-alive event for a long silence (Anthropic's `ping`) */
  heartbeat(): string;
}
